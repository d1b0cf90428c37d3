"""A network-only agent for the 3-player and 2v2 tables: one move network scores every legal move.

The 2-player ``neural-solo`` recipe (``agents.nets.solo``) scores each legal *move* (a hand card and the
table cards it takes; ``agents.moves``) from the position it leaves, with inputs that assume one
other hand. ``table_inputs`` extends those inputs to several other seats, so that the same recipe
(regression onto ``search``'s per-move rollout values, ``agents.training.solo_fit --phase table``)
works at every table. At 3 players and 2v2 no position is solvable exactly (the stock's end still
leaves two or three hidden hands), so one network plays every decision: one forward pass, no
search, no rollout at play time.

Inputs per move (``table_input_names(rules)``; all read from the observation, relative seats and
sides as in ``escoba_env.executors.observation``, side 0 the observer's):

- five 40-card blocks: the observer's hand after the move, the unseen cards (every other hand and
  the stock together, which the observer cannot tell apart), the table after the move, the card
  played, the cards it captures (the played card included);
- per relative side: its capture pile's cards / 40, oros / 10, sevens / 4 and velo after the move,
  and its escobas (the observer's side counting an escoba the move makes);
- who captured last after the move (one-hot over relative seats), whether the move sweeps, whether
  it is a discard, the observer's hand size / 3 after it, every other seat's hand size / 3, the
  stock's size / 30;
- the counts of the cards still in play (hands, stock and table), and per side and category (cards,
  oros, sevens, velo) whether it has already won the point (more than half of it) and whether it
  can still be the strict majority (its count plus every card in play above every other side's);
- what the unseen cards can answer on the table left for the *next* seat (a hand of its size drawn
  from them; ``agents.nets.move_inputs.hidden_replies``): the share that capture and that sweep, the chance
  the next seat holds one of each, the most cards, oros, sevens and velo one of them could take;
- the observer's up to three cards after the move and what each can take
  (``agents.nets.move_inputs.card_slots``).

The network (``agents.nets.solo.EndgameNet`` on these inputs) predicts the round's points of the
observer's side minus the mean of the other sides' after the move, the quantity ``search``
estimates. An action's value is the best value of the moves that start with it.

Checkpoint: an ``agents.nets.neural`` checkpoint (same format, loader, ``weights_only`` loading and shape
checks) of the table's PPO network, which the file keeps as the behaviour policy the labels were
collected with (it never plays), plus ``move_net`` (``{"hidden": [...], "inputs": N}``),
``move_model`` (its ``state_dict``) and ``move_training`` (how it was fitted); optionally
``move_play`` (``{"symmetric": True}``: the values averaged over the plain suits' permutations,
``agents.nets.solo.symmetric_values``) and a last-deal network that plays once the stock is empty
(``last_net``, ``last_model``, ``last_training``; ``solo_fit --phase last``), with ``last_inputs``
naming its inputs (``LAST_INPUTS``; absent: ``"table"``, the move network's).

With ``last_inputs = "answers"`` (``solo_fit --phase last --answers``) the last-deal network reads
four more 40-card blocks after the first five, what each unseen card would take if a seat played it
on the table the move leaves (the cards / 10, whether it sweeps, the oros / 4, and sevens / 4 plus
the velo of the union of its options and itself; zeros for a card that captures nothing), and at
the end, for every seat after the next, the chance its hand holds a card that captures and one that
sweeps there (``last_input_names``).
``agents.nets.loader.load_checkpoint_agent`` (the registry's ``checkpoint:PATH``) returns a
``TableNetAgent`` for such a file.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from escoba_env.executors.observation import PLANE
from escoba_env.rulebook.rules import Rules

from ..base import Agent
from ..heuristic.strategy import hold_probability
from ..moves import best_per_row, move_actions
from ..worlds import obs_layout, observation_scalars
from .fixedpoint import move_values as fixed_move_values
from .fixedpoint import symmetric_move_values
from .move_inputs import (
    ANSWER_BLOCKS,
    SLOT,
    answer_blocks,
    card_answers,
    card_bits,
    card_slots,
    hidden_replies,
    pile_shares,
    positions_after_moves,
)
from .neural import check_compatible, checkpoint_dict, load_checkpoint
from .solo import EndgameNet, build_endgame_net, suit_permutations

_SIZE = np.array([40, 10, 4, 1], np.float32)
_CATS = ("cards", "oros", "sevens", "velo")
_BLOCKS = ("hand_after", "unseen", "table_after", "card", "captured")
LAST_INPUTS = ("table", "answers")
"""The input sets a last-deal network may read: the move network's (``table_input_names``), or those
plus what each unseen card answers (``last_input_names``)."""


def check_table_rules(rules: Rules) -> None:
    """Raise ValueError unless the move network can read games of ``rules`` (no jokers)."""
    if rules.jokers:
        raise ValueError(f"the table move network plays games without jokers, not {rules}")


def table_input_names(rules: Rules) -> tuple[str, ...]:
    """Return the names of the move network's inputs at ``rules``' table, in order."""
    s, p = rules.num_sides, rules.num_players
    names = [f"{b}[{c}]" for b in _BLOCKS for c in range(40)]
    for side in range(s):
        names += [f"side{side}_{c}" for c in _CATS] + [f"side{side}_escobas"]
    names += [f"last_seat{r}" for r in range(p)] + ["escoba", "discard", "my_hand_size"]
    names += [f"seat{r}_hand_size" for r in range(1, p)] + ["stock_size"]
    names += [f"live_{c}" for c in _CATS]
    names += [f"side{side}_{what}_{c}" for side in range(s) for what in ("has", "can") for c in _CATS]
    names += [
        "unseen_capture_share",
        "unseen_sweep_share",
        "p_next_captures",
        "p_next_sweeps",
        "reply_cards",
        "reply_oros",
        "reply_sevens",
        "reply_velo",
    ]
    names += [f"my_card{i}_{w}" for i in range(3) for w in SLOT]
    return tuple(names)


def last_input_names(rules: Rules, inputs: str = "table") -> tuple[str, ...]:
    """Return the names of a last-deal network's inputs of the set ``inputs`` (``LAST_INPUTS``) at
    ``rules``' table, in order; ValueError for an unknown set."""
    names = table_input_names(rules)
    if inputs not in LAST_INPUTS:
        raise ValueError(f"unknown last-deal inputs {inputs!r}; expected one of {', '.join(LAST_INPUTS)}")
    if inputs == "table":
        return names
    blocks = [f"{b}[{c}]" for b in ANSWER_BLOCKS for c in range(40)]
    holds = [f"seat{r}_holds_{w}" for r in range(2, rules.num_players) for w in ("capture", "sweep")]
    return names[:200] + tuple(blocks) + names[200:] + tuple(holds)


def input_blocks(inputs: str = "table") -> int:
    """Return how many 40-card blocks start the inputs of the set ``inputs`` (what
    ``agents.nets.solo.suit_permutations`` permutes)."""
    return {"answers": 9, "playout": 12}.get(inputs, 5)


def _answer_inputs(a: dict[str, Any], rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(blocks, holds)`` of the moves of ``positions_after_moves`` ``a``: float32 (M, 160), what
    each unseen card takes on the table left, and float32 (M, 2 * (players - 2)), the chance each seat
    after the next holds a card that captures / sweeps there (``last_input_names``)."""
    unseen, tables = a["unseen"], a["table_after"]
    m = len(unseen)
    r2, caps, sweep, _ = card_answers(unseen, tables)
    n = np.maximum(np.bitwise_count(unseen).astype(np.float64), 1.0)
    counts = [np.bincount(r2, weights=f, minlength=m) for f in (caps, sweep)]
    sizes = a["scalars"]["hand_sizes"]
    holds = [hold_probability(n, k, sizes[:, seat]) for seat in range(2, rules.num_players) for k in counts]
    holds = np.column_stack(holds).astype(np.float32) if holds else np.zeros((m, 0), np.float32)
    return answer_blocks(unseen, tables), holds


def table_inputs(obs: np.ndarray, rules: Rules, masks: np.ndarray, answers: bool = False):
    """Return ``(moves, inputs, member)`` of observations of the seat to act at ``rules``' table.

    ``inputs`` float32 (M, len(table_input_names(rules))) describes each legal move (module doc);
    ``member`` bool (M, 40) says which actions each move can start with: its card, or during a
    capture choice the table cards of its option that are legal now (``masks``: int8 (K, 40)).
    ``answers``: the inputs of ``last_input_names(rules, "answers")`` instead.
    Batched over all rows and moves: a fixed number of NumPy calls, no loop over positions.
    """
    check_table_rules(rules)
    s, p = rules.num_sides, rules.num_players
    a = positions_after_moves(obs, rules, masks)
    pl, sc = a["planes"], a["scalars"]
    hand_after, table_after, unseen = a["hand_after"], a["table_after"], a["unseen"]
    captured, escoba, took, last = a["captured"], a["escoba"], a["took"], a["last"]
    side_of = [rules.side_of(seat) for seat in range(p)]
    piles = []
    for side in range(s):
        m = np.zeros(len(pl), np.uint64)
        for seat in range(p):
            if side_of[seat] == side:
                m |= pl[:, PLANE["piles"] + seat]
        piles.append(m | captured if side == 0 else m)
    esc = sc["escobas"][:, :s].astype(np.float32)
    esc[:, 0] += escoba
    live = pile_shares(hand_after | unseen | table_after)
    counts = np.stack([pile_shares(m) * _SIZE for m in piles])  # (S, M, 4)
    live_n = live * _SIZE
    flags = []
    for side in range(s):
        others = np.max(np.delete(counts, side, axis=0), axis=0)
        flags += [counts[side] > _SIZE / 2, counts[side] + live_n > others]
    sizes = sc["hand_sizes"]
    cols = []
    for side in range(s):
        cols += [pile_shares(piles[side]), esc[:, side]]
    cols += [
        (last[:, None] == np.arange(p)[None, :]),
        escoba,
        ~took,
        np.bitwise_count(hand_after).astype(np.float32) / 3.0,
        sizes[:, 1:p] / 3.0,
        sc["stock"] / 30.0,
        live,
        *flags,
        hidden_replies(unseen, sizes[:, 1], table_after),
        card_slots(hand_after, table_after),
    ]
    scal = np.column_stack(cols).astype(np.float32)
    bits = [card_bits(m) for m in (hand_after, unseen, table_after, a["card_bit"], captured)]
    if answers:
        blocks, holds = _answer_inputs(a, rules)
        x = np.concatenate([*bits, blocks, scal, holds], axis=1)
    else:
        x = np.concatenate([*bits, scal], axis=1)
    return a["moves"], x, a["member"]


class TableNetAgent(Agent):
    """Plays the best-scored move of a move network on ``table_inputs`` (one forward pass a decision)."""

    def __init__(self, net: EndgameNet, rules: Rules, seed: int | None = None, name: str = "table-net",
                 symmetric: bool = False, last: EndgameNet | None = None, last_inputs: str = "table"):
        check_table_rules(rules)
        for what, n, inputs in (("move", net, "table"), ("last-deal", last, last_inputs)):
            need = len(last_input_names(rules, inputs))
            if n is not None and n.net_config()["inputs"] != need:
                raise ValueError(
                    f"the {what} network reads {n.net_config()['inputs']} inputs; {rules} needs {need}"
                )
        self.net = net.eval()
        self.last = None if last is None else last.eval()
        self.last_inputs = last_inputs
        self.name = name
        self.symmetric = bool(symmetric)
        super().__init__(rules, seed)

    def move_values(self, x: torch.Tensor | np.ndarray, net: EndgameNet | None = None, blocks: int = 5
                    ) -> torch.Tensor:
        """Return float64 (M,) the value of each move's inputs ``x`` by ``net`` (default: the move
        network) in fixed point (``agents.nets.fixedpoint``: the same bits on every machine, whatever the
        batch): the network's, or with ``symmetric`` its mean over the six permutations of the plain
        suits in the first ``blocks`` 40-card blocks (``agents.nets.solo.suit_permutations``)."""
        net = self.net if net is None else net
        if self.symmetric:
            return symmetric_move_values(net, x, suit_permutations(x.shape[1], blocks))
        return fixed_move_values(net, x)

    @torch.no_grad()
    def act_batch(self, observations, action_masks, state=None):
        """Return one action per row: the first action of its best-scored move."""
        obs = np.asarray(observations, np.float32)
        masks = np.asarray(action_masks, np.int8)
        if obs.ndim != 2 or obs.shape[1] != obs_layout(self.rules).size or masks.shape != (len(obs), 40):
            raise ValueError(
                f"observations (K, {obs_layout(self.rules).size}) and masks (K, 40) expected, "
                f"got {obs.shape} and {masks.shape}"
            )
        if not (masks > 0).any(axis=1).all():
            raise ValueError(f"{self.name} got a row with no legal action")
        if self.last is None:
            return self._play(self.net, obs, masks)
        actions = np.zeros(len(obs), np.int64)
        late = observation_scalars(obs, self.rules)["stock"] == 0
        for rows, net, inputs in ((np.flatnonzero(~late), self.net, "table"),
                                  (np.flatnonzero(late), self.last, self.last_inputs)):
            if rows.size:
                actions[rows] = self._play(net, obs[rows], masks[rows], inputs)
        return actions

    def _play(self, net: EndgameNet, obs: np.ndarray, masks: np.ndarray, inputs: str = "table") -> np.ndarray:
        """Return each row's action: the first action of its move best scored by ``net`` on the input
        set ``inputs``."""
        moves, x, _ = table_inputs(obs, self.rules, masks, answers=inputs == "answers")
        values = self.move_values(x, net, input_blocks(inputs))
        chosen = best_per_row(moves, values.numpy())
        return move_actions(moves, chosen, obs, masks)

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike,
        rules: Rules | None = None,
        seed: int | None = None,
        device: str = "cpu",
        deterministic: bool = True,
        name: str | None = None,
        symmetric: bool | None = None,
    ) -> TableNetAgent:
        """Return the agent of a move-network checkpoint (FileNotFoundError / ValueError as
        agents.nets.neural).

        ``device`` and ``deterministic`` are accepted for the registry's checkpoint parameters; the
        move network always runs on the CPU and always plays its best-scored move. ``symmetric``
        (default: the checkpoint's ``move_play["symmetric"]``, else False) averages the move values
        over the plain suits' permutations."""
        ckpt = load_checkpoint(path, map_location="cpu")
        trained = check_compatible(ckpt, rules, str(path))
        play = move_play(ckpt, str(path))  # checked even when ``symmetric`` overrides it
        symmetric = play["symmetric"] if symmetric is None else symmetric
        last, last_inputs = None, ckpt.get("last_inputs", "table")
        if last_inputs not in LAST_INPUTS:
            raise ValueError(f"checkpoint {str(path)!r} has unknown last_inputs {last_inputs!r}; expected "
                             f"one of {', '.join(LAST_INPUTS)}")
        if "last_net" in ckpt:
            need = len(last_input_names(trained, last_inputs))
            last = build_endgame_net(ckpt, str(path), "last", need=need)
        return cls(
            build_move_net(ckpt, trained, str(path)),
            trained,
            seed=seed,
            name=name if name is not None else f"checkpoint:{path}",
            symmetric=symmetric,
            last=last,
            last_inputs=last_inputs,
        )


def move_play(ckpt: dict[str, Any], where: str = "checkpoint") -> dict[str, bool]:
    """Return how a move-network checkpoint plays: ``{"symmetric": bool}`` from its optional
    ``move_play`` entry (absent: not symmetric); ValueError for a malformed entry."""
    play = ckpt.get("move_play", {})
    if not isinstance(play, dict) or set(play) - {"symmetric"} or not isinstance(
            play.get("symmetric", False), bool):
        raise ValueError(f"checkpoint {where!r} has a malformed move_play entry {play!r}: expected "
                         f"{{'symmetric': True or False}}")
    return {"symmetric": play.get("symmetric", False)}


def build_move_net(ckpt: dict[str, Any], rules: Rules, where: str = "checkpoint") -> EndgameNet:
    """Return the move network stored in ``ckpt`` for ``rules``' table; ValueError if it is missing or
    does not fit."""
    return build_endgame_net(ckpt, where, "move", need=len(table_input_names(rules)))


def move_checkpoint_dict(plain, net: EndgameNet, last: EndgameNet | None = None,
                         **extra: Any) -> dict[str, Any]:
    """Return the checkpoint dict of a ``TableNetAgent``: the behaviour network ``plain`` (a
    NeuralAgent, kept for provenance) plus the move network and, if given, the last-deal network."""
    def weights(n: EndgameNet) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu().clone() for k, v in n.state_dict().items()}

    if last is not None:
        extra = {**extra, "last_net": last.net_config(), "last_model": weights(last)}
    return checkpoint_dict(plain.net, plain.rules, move_net=net.net_config(), move_model=weights(net),
                           **extra)
