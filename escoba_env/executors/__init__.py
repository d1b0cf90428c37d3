"""The executors: what runs the rule book (``escoba_env.rulebook``) game by game, under every face.

- ``engine``: the batched engine, ``EscobaEngine``: N games as NumPy arrays stepped at once; its step
  is split along the turn: ``engine_turn`` (play a card or name a table card, capture, pass the turn),
  ``engine_round`` (the next deal or the round's end, scoring, the game's end) and ``engine_deal``
  (start a round, deal the hands); ``unpack_mask`` and ``sample_actions`` read its legal masks;
- ``game``: the one-game executor, ``Game``: one game on plain Python ints (the faces that step one
  game at a time);
- ``step_info``: what one batched step reports (``StepInfo``);
- ``observation``: the seat-relative observation and action masks, encoded from an executor's state;
- ``state``: the privileged global state of one game (centralised critics).

**The executor contract.** A new executor (a compiled or accelerator engine) goes here, and offers what
``EscobaEngine`` offers, so that every face, the agents' worlds and the observation encoder run on it
unchanged:

- **Construction**: ``(num_games, rules=None, *, single_round=False, max_rounds=None, autoreset=False)``,
  rules checked by ``rulebook.rules.check_rules``; ``rules``, ``num_games``, ``num_players``,
  ``num_sides`` and ``rows`` (the indices ``0..N-1``).
- **State arrays**, one row per game, read by the faces, the observation encoder and the agents:
  ``hands``, ``piles``, ``played`` (N, P) uint64 and ``table`` (N,) uint64 card masks (bit c = card c;
  bits 40, 41 the jokers); ``escobas`` (N, P) and ``scores`` (N, S) int64; ``deck`` (N, num_cards) int8
  and ``stock_pos``; ``dealer``, ``to_act``, ``last_capturer``, ``pending``, ``taken``, ``taken_value``,
  ``hand_count``, ``round_index``, ``episode``, ``game_ids``, ``seed``; ``done``, ``truncated``,
  ``winner``; and ``legal`` (N,) uint64, the legal action mask of the seat to act.
- **Reset**: ``reset(seed, *, game_ids=None, dealer=None, deck=None, hands=None, table=None,
  stock=None)`` deals what ``rulebook.deal_rules`` deals for ``(seed, game id, episode, round)``, so
  slot ``g`` of any executor deals the same cards; ``reset_games(games)`` starts the next episode of
  those slots. Bad input raises ``ValueError`` and changes nothing.
- **Step**: ``step(actions, active=None) -> StepInfo``: one card id per game, the play/take scheme
  (docs/rules.md §10), finished games and games outside ``active`` untouched (actor -1); an illegal
  action raises ``ValueError`` and changes nothing (``check_actions``). With ``autoreset`` a finished
  slot starts its next episode in the same step, its report holding the final scores and winner.
- **Legal masks**: ``legal`` as above, ``legal_action_mask()`` (N, num_cards) uint8,
  ``legal_actions(game)``.
- **Observations**: none of its own: ``observation.encode(executor, seats, games)`` and
  ``observation.action_masks`` read the state arrays above, so the observation is the same bit for
  bit on every executor.
- **Copies and totals**: ``clone()`` (an independent copy; the search replicates worlds with it),
  ``side_totals(games)`` and ``card_count()`` (the conservation check of the property tests).

``tests/engine/test_game_differential.py`` is the check: it plays random games of every rules
configuration side by side in ``Game`` and a batched executor, and compares the whole state, the
step's report, both reward kinds and every seat's observation after every step. A new executor is
added there beside ``EscobaEngine`` (and to the property tests of ``tests/engine/``), and is done when
it passes them.
"""
