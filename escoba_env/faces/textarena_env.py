"""Escoba as a TextArena environment (``textarena``'s own ``Env`` API; the ``[textarena]`` extra).

TextArena's agents and model wrappers play it unchanged::

    import textarena as ta
    from escoba_env.faces.textarena_env import register
    register()                                   # "Escoba-v0" in TextArena's registry
    env = ta.make("Escoba-v0")
    env.reset(num_players=2, seed=0)
    done = False
    while not done:
        player_id, observation = env.get_observation()
        done, info = env.step(agent(observation))   # e.g. "[3]" or "7 de oros takes 5 de bastos"
    rewards, game_info = env.close()

One TextArena step is one *full move* of the text face (``escoba_env.faces.text``): the player answers
with the number of a listed move or the move written out, and the capture it names is carried out
whole. Each player is told the rules at reset; before each of its turns it gets its own view of the
position (its hand, never another's) with the legal moves numbered; every move played is announced
to all. An answer that names no legal move is refused with the reason (``error_allowance`` times
per turn); one more ends the game, lost by that player's side. Rewards at the end: +1 for the
winning side's players, -1 for the others, 0 for everyone on a draw (a whole game to the target
score, or with ``single_round=True`` one round, won by the most points).

Randomness: the deal comes from ``reset``'s seed through the engine (TextArena's own state is given
no seed, so that it never seeds Python's global ``random``).
"""

from __future__ import annotations

from typing import Any

import textarena as ta

from ..executors.game import Game
from ..rulebook.cards import move_words
from ..rulebook.rules import Rules
from .text import ANSWER_FORMAT, IllegalAnswer, describe, legal_moves, move_action, parse_answer, rules_brief

ENV_ID = "Escoba-v0"


class EscobaTextArenaEnv(ta.Env):
    """Escoba for TextArena (see the module docstring)."""

    def __init__(self, rules: Rules | None = None, single_round: bool = False, french: bool = False,
                 error_allowance: int = 2):
        self.rules = Rules() if rules is None else rules
        self.single_round = bool(single_round)
        self.french = bool(french)
        self.error_allowance = int(error_allowance)
        self.game = Game(self.rules, single_round=self.single_round)

    def reset(self, num_players: int, seed: int | None = None) -> None:
        """Deal a new game for ``num_players`` (they must match the rules) from ``seed``."""
        if num_players != self.rules.num_players:
            raise ValueError(f"these rules are for {self.rules.num_players} players, got num_players="
                             f"{num_players}")
        self.state = ta.FFAMultiPlayerState(num_players=num_players, seed=None,
                                            error_allowance=self.error_allowance)
        self.game.reset(0 if seed is None else int(seed))
        self.state.reset(game_state={"seed": seed}, player_prompt_function=self._prompt)
        self.state.manually_set_current_player_id(self.game.to_act, force=True)
        self._show_position()

    def _prompt(self, player_id: int, game_state: dict[str, Any]) -> str:
        """Return the rules message of ``player_id``."""
        team = f" (your partner is Player {(player_id + 2) % 4})" if self.rules.partnerships else ""
        return (f"You are Player {player_id}{team}.\n" + rules_brief(self.rules, self.french) + "\n\n"
                + ANSWER_FORMAT)

    def _show_position(self) -> None:
        """Give the player to act its view of the position with the legal moves numbered."""
        seat = self.game.to_act
        self.state.add_observation(message=describe(self.game.observe(seat), self.rules, self.french),
                                   observation_type=ta.ObservationType.GAME_BOARD, to_id=seat)

    def step(self, action: str) -> tuple[bool, dict]:
        """Play the move that ``action`` names for the current player; return (done, info)."""
        g, seat = self.game, self.game.to_act
        self.state.add_observation(from_id=seat, message=action,
                                   observation_type=ta.ObservationType.PLAYER_ACTION)
        obs = g.observe(seat)
        moves = legal_moves(obs, self.rules)
        try:
            move = parse_answer(action, moves, self.french)
        except IllegalAnswer as exc:
            if self.state.set_invalid_move(reason=str(exc)):  # out of allowance: the side loses
                loser = self.rules.side_of(seat)
                self.state.set_game_outcome(
                    {p: -1 if self.rules.side_of(p) == loser else 1 for p in range(self.rules.num_players)},
                    f"Player {seat} gave no legal move ({exc}).")
            return self.state.step(rotate_player=False)
        g.step(move_action(move, obs, g.action_mask(seat), self.rules))
        while g.pending >= 0 and not g.done:
            g.step(move_action(move, g.observe(seat), g.action_mask(seat), self.rules))
        said = move_words(move.card, move.taken, self.french)
        self.state.add_observation(message=f"Player {seat} plays {said}.",
                                   observation_type=ta.ObservationType.GAME_ACTION_DESCRIPTION)
        if g.done:
            self._finish()
        else:
            self.state.manually_set_current_player_id(g.to_act)
            self._show_position()
        return self.state.step(rotate_player=False)

    def _finish(self) -> None:
        """Set the rewards: the side with the most points wins (+1), the others lose (-1); a tie, 0."""
        totals = list(self.game.scores)
        best = max(totals)
        if totals.count(best) > 1:
            self.state.set_draw(f"A draw at {best} points.")
            return
        side = totals.index(best)
        self.state.set_game_outcome(
            {p: 1 if self.rules.side_of(p) == side else -1 for p in range(self.rules.num_players)},
            f"Side {side} wins with {best} points (scores {totals}).")


def register(env_id: str = ENV_ID, **kwargs: Any) -> None:
    """Register ``EscobaTextArenaEnv(**kwargs)`` as ``env_id`` in TextArena's registry (once), with
    TextArena's default wrappers (the message history as one prompt, answers put in brackets)."""
    from textarena.envs.registration import ENV_REGISTRY
    from textarena.envs.registration import register as ta_register
    from textarena.wrappers import ActionFormattingWrapper, LLMObservationWrapper

    if env_id not in ENV_REGISTRY:
        ta_register(id=env_id, entry_point=EscobaTextArenaEnv,
                    default_wrappers=[LLMObservationWrapper, ActionFormattingWrapper], **kwargs)
