"""Teacher-labelled decisions for kickstarting PPO from a stronger (slower) agent.

Kickstarting (Schmitt et al., 2018, "Kickstarting Deep Reinforcement Learning") adds to the RL loss
a cross-entropy term pulling the learner's policy toward a teacher's choices. Here the teacher is
usually ``search`` (PIMC, about 0.28 points per round stronger than ``expert`` but about 4 ms per
decision), too slow to query during training, so its choices are collected once, offline:

1. ``collect_labels`` plays single rounds on the batched engine. Each seat of each game is played
   by a *behaviour* agent drawn per game (for example the current network, ``expert`` and
   ``greedy``), so the positions look like the ones the learner meets;
2. every decision with more than one legal action is shown to the teacher (batched ``act_batch``;
   the teacher only sees the observation, like any fair agent, unless it declares ``needs_state``:
   a cheating label teacher such as ``oracle`` also gets the true engine state); its action
   is the label;
3. with probability ``follow`` the teacher's action is also the one played (DAgger-style mixing,
   so positions after strong moves are visited too).

The labels are written as one ``.npz`` (``obs`` float16, ``mask`` int8, ``action`` int64; with
``--values`` also ``values`` float32, the teacher's per-action rollout values; and a JSON ``meta``
with the rules, the teacher, the behaviour agents and the seed), which ``train.py --distill-data
PATH`` reads (see ``agents.training.Config.distill_data``)::

    python -m agents.training.distill --out runs/labels/search_150k.npz --labels 150000 \\
        --teacher search --behaviour neural-2p-plain expert greedy \\
        --weights 0.5 0.35 0.15 --seed 11
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.observation import action_masks, encode, obs_size
from escoba_env.faces.cli import add_rules_arguments, positive_int, rules_from_args
from escoba_env.rulebook.rules import Rules

from ..base import Agent
from ..heuristic.endgame import EndgameAgent, endgame_rows
from ..moves import move_actions
from ..search.pimc import SearchAgent
from ..spec.registry import make_agent
from ..worlds import observation_scalars

LABELS_FORMAT = "escoba-env-labels"
LABEL_KEYS = ("obs", "mask", "action")


def collect_labels(teacher: Agent, behaviour: Sequence[Agent], rules: Rules, labels: int, *,
                   weights: Sequence[float] | None = None, num_games: int = 256, seed: int = 0,
                   follow: float = 0.3, progress: bool = False, values: bool = False,
                   last_deal: bool = False, stock: int | None = None) -> dict[str, np.ndarray]:
    """Return at least ``labels`` teacher-labelled decisions: ``{"obs", "mask", "action"}`` arrays.

    Single rounds of ``num_games`` games are played at once; each game's seats are given behaviour
    agents drawn with ``weights`` (uniform by default), anew for every round. Only decisions with
    more than one legal action are labelled (with an ``endgame`` teacher, ``agents.heuristic.endgame``, only
    the 2-player endgame decisions, the ones it solves exactly). ``follow`` is the probability of
    playing the teacher's action instead of the behaviour agent's. ``values=True`` (a ``search`` or
    ``endgame`` teacher) also returns ``"values"`` (float32, one row per label, one column per
    action): the best mean rollout value of the teacher's moves that start with that action (an
    ``endgame`` teacher: the exact minimax value), -inf for actions it did not weigh.
    ``last_deal=True`` labels only the decisions taken once the stock is empty (the round's last
    deal), at any table; the teacher is not asked about the others. ``stock=N`` likewise labels only
    the decisions taken with N cards in the stock (one deal of the round; ``last_deal`` is ``stock=0``).
    """
    exact = isinstance(teacher, EndgameAgent)
    w = _checked_weights(teacher, behaviour, labels, weights, num_games, follow, values, exact, last_deal,
                         stock)
    rng = np.random.default_rng(seed)
    p = rules.num_players
    eng = EscobaEngine(num_games, rules, single_round=True, autoreset=True)
    eng.reset(seed=seed)
    who = rng.choice(len(behaviour), size=(num_games, p), p=w)
    rows = np.arange(num_games)
    obs_parts, mask_parts, act_parts, value_parts = [], [], [], []
    got = 0
    bar = None
    if progress:
        from tqdm.auto import tqdm  # the [train] extra
        bar = tqdm(total=labels, unit="label", dynamic_ncols=True)
    try:
        while got < labels:
            seat = eng.to_act
            obs = encode(eng, seat)
            mask = action_masks(eng, seat)
            acts = _behaviour_actions(behaviour, who[rows, seat], obs, mask)
            multi = np.flatnonzero(_to_label(obs, mask, rules, exact, last_deal, stock))
            if multi.size:
                taught, taught_values = _teach(teacher, eng, obs, mask, multi, values, exact)
                obs_parts.append(obs[multi].astype(np.float16))
                mask_parts.append(mask[multi].astype(np.int8))
                act_parts.append(taught)
                if values:
                    value_parts.append(taught_values)
                got += multi.size
                follow_rows = rng.random(multi.size) < follow
                acts[multi[follow_rows]] = taught[follow_rows]
                if bar is not None:
                    bar.update(multi.size)
            info = eng.step(acts)
            ended = np.flatnonzero(info.game_over)
            if ended.size:
                who[ended] = rng.choice(len(behaviour), size=(ended.size, p), p=w)
    finally:
        if bar is not None:
            bar.close()
    out = {"obs": np.concatenate(obs_parts), "mask": np.concatenate(mask_parts),
           "action": np.concatenate(act_parts)}
    if values:
        out["values"] = np.concatenate(value_parts)
    return out


def _checked_weights(teacher: Agent, behaviour: Sequence[Agent], labels: int, weights: Sequence[float] | None,
                     num_games: int, follow: float, values: bool, exact: bool, last_deal: bool,
                     stock: int | None) -> np.ndarray:
    """Return the behaviour agents' draw probabilities, having checked ``collect_labels``' arguments
    (ValueError naming the first bad one)."""
    if values and not (isinstance(teacher, SearchAgent) or exact):
        raise ValueError(f"values=True needs a search or endgame teacher (one that reports action values), "
                         f"not {teacher.name}")
    if not behaviour:
        raise ValueError("collect_labels needs at least one behaviour agent")
    if labels < 1 or num_games < 1:
        raise ValueError(f"labels and num_games must be positive, got {labels} and {num_games}")
    if stock is not None and (stock < 0 or (last_deal and stock != 0)):
        raise ValueError(f"stock must be a card count of 0 or more (0 with last_deal), got {stock}")
    if not 0.0 <= follow <= 1.0:
        raise ValueError(f"follow must be in [0, 1], got {follow}")
    w = np.ones(len(behaviour)) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (len(behaviour),) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be {len(behaviour)} non-negative numbers, not all 0; got {weights}")
    return w / w.sum()


def _behaviour_actions(behaviour: Sequence[Agent], ctrl: np.ndarray, obs: np.ndarray,
                       mask: np.ndarray) -> np.ndarray:
    """Return the action of each game's behaviour agent (``ctrl``: its index in ``behaviour``)."""
    acts = np.zeros(len(obs), np.int64)
    for k, agent in enumerate(behaviour):
        g = np.flatnonzero(ctrl == k)
        if g.size:
            acts[g] = agent.act_batch(obs[g], mask[g])
    return acts


def _to_label(obs: np.ndarray, mask: np.ndarray, rules: Rules, exact: bool, last_deal: bool,
              stock: int | None) -> np.ndarray:
    """Return where a decision is labelled: more than one legal action (an ``exact`` teacher: in the
    endgame it solves; ``last_deal``/``stock``: with that many cards in the stock)."""
    several = mask.sum(axis=1) > 1
    if exact:
        several &= endgame_rows(obs, rules)
    if last_deal or stock is not None:
        several &= observation_scalars(obs, rules)["stock"] == (0 if stock is None else stock)
    return several


def _teach(teacher: Agent, eng: EscobaEngine, obs: np.ndarray, mask: np.ndarray, multi: np.ndarray,
           values: bool, exact: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the teacher's actions on the rows ``multi`` and, with ``values``, its per-action values."""
    if teacher.needs_state:  # a cheating label teacher (the oracles) reads the true state
        taught = teacher.act_batch(obs[multi], mask[multi], state=(eng, multi))
    else:
        taught = teacher.act_batch(obs[multi], mask[multi])
    taught = np.asarray(taught, np.int64)
    if values and exact:
        v = teacher.last_values
        return taught, np.where(np.isnan(v), -np.inf, v).astype(np.float32)
    if values:
        return taught, _action_values(teacher, obs[multi], mask[multi])
    return taught, None


def _action_values(teacher: Agent, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Return (K, W) per-action values of the teacher's last ``act_batch`` on these rows."""
    moves, mv = teacher.last_moves, teacher.last_move_values
    first = move_actions(moves, np.arange(len(moves.card)), obs[moves.row], masks[moves.row])
    out = np.full(masks.shape, -np.inf, np.float32)
    ok = ~np.isnan(mv)
    np.maximum.at(out, (moves.row[ok], first[ok]), mv[ok].astype(np.float32))
    return out


def action_regret(values: np.ndarray, mask: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Return float64 (K,) regrets of ``actions`` on labelled decisions: the teacher's best value of a
    legal action minus its value of the action taken (0: a best action); NaN where the teacher did
    not value the action taken (a capture choice naming another card of the same option)."""
    vals = np.where((np.asarray(mask) > 0) & np.isfinite(values), values, -np.inf).astype(np.float64)
    got = vals[np.arange(len(vals)), np.asarray(actions, np.int64)]
    return np.where(np.isfinite(got), vals.max(axis=1) - got, np.nan)


def save_labels(path: str | os.PathLike, data: dict[str, np.ndarray], rules: Rules, **meta: Any) -> str:
    """Write labels and their metadata (rules, teacher, ...) to ``path`` (.npz, exactly that name);
    return the path. The file appears whole or not at all (a temporary file, then a rename)."""
    path = os.fspath(path)
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    info = {"format": LABELS_FORMAT, "rules": rules.to_dict(), **meta}
    arrays = {k: data[k] for k in (*LABEL_KEYS, "values") if k in data}
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, meta=np.array(json.dumps(info)), **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def load_labels(path: str | os.PathLike, rules: Rules | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """Return ``(arrays, meta)`` of a labels file, checked (rules, shapes, legality of every label).

    Raises FileNotFoundError for a missing file and ValueError for a corrupt, inconsistent or
    incompatible one (other rules than ``rules``).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"labels file {path!r} "
                                f"does not exist (make one with python -m agents.training.distill)")
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            arrays = {k: z[k] for k in LABEL_KEYS}
            if "values" in z.files:
                arrays["values"] = z["values"]
    except Exception as e:  # zip, key or JSON errors: all mean the same thing to the user
        raise ValueError(f"labels file {path!r} is corrupt or not a labels file: {e}") from e
    if meta.get("format") != LABELS_FORMAT:
        raise ValueError(f"labels file {path!r} is not a labels file (format {meta.get('format')!r})")
    stored = Rules.from_dict(meta["rules"])
    if rules is not None and stored != rules:
        raise ValueError(f"labels file {path!r} was collected for {stored}, not {rules}")
    n = len(arrays["action"])
    nc = stored.num_cards
    if (arrays["obs"].shape != (n, obs_size(stored)) or arrays["mask"].shape != (n, nc)
            or arrays.get("values", arrays["mask"]).shape != (n, nc)
            or arrays["action"].ndim != 1):
        raise ValueError(f"labels file {path!r} has inconsistent shapes: "
                         f"{ {k: v.shape for k, v in arrays.items()} }")
    a = arrays["action"]
    if n == 0 or (a < 0).any() or (a >= nc).any() or not arrays["mask"][np.arange(n), a].all():
        raise ValueError(f"labels file {path!r} holds no labels or labels that are not legal actions")
    return arrays, meta


def build_parser() -> argparse.ArgumentParser:
    """Return the argparse parser of ``python -m agents.training.distill``."""
    ap = argparse.ArgumentParser(prog="python -m agents.training.distill",
                                 description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--out", required=True, help="the .npz file to write (never overwritten)")
    ap.add_argument("--labels", type=positive_int, default=150_000, help="decisions to label")
    ap.add_argument("--teacher", default="search", help="agent spec of the teacher")
    ap.add_argument("--behaviour", nargs="+", default=["expert", "greedy"],
                    help="agent specs playing the seats")
    ap.add_argument("--weights", nargs="+", type=float, default=None,
                    help="sampling weight of each behaviour agent (default: uniform)")
    ap.add_argument("--follow", type=float, default=0.3, help="probability of playing the teacher's move")
    ap.add_argument("--values", action="store_true",
                    help="also store the teacher's per-action values (search teachers only)")
    ap.add_argument("--games", type=positive_int, default=256,
                    help="games played at once (the games advance together: a small file of many games "
                         "holds only the rounds' first deals)")
    ap.add_argument("--last-deal", action="store_true",
                    help="label only the decisions taken once the stock is empty (the last deal)")
    ap.add_argument("--stock", type=int, default=None,
                    help="label only the decisions taken with this many cards in the stock (one deal of the "
                         "round; 0 is --last-deal)")
    ap.add_argument("--seed", type=int, default=0, help="seed of deals, draws and agents")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_rules_arguments(ap.add_argument_group("rules"))
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the label collection CLI; return the exit code."""
    args = build_parser().parse_args(argv)
    if os.path.exists(args.out):
        print(f"error: {args.out} already exists; choose another --out", file=sys.stderr)
        return 2
    try:
        rules = rules_from_args(args)
        teacher = make_agent(args.teacher, rules=rules, seed=args.seed + 1000)
        behaviour = [make_agent(s, rules=rules, seed=args.seed + i) for i, s in enumerate(args.behaviour)]
        t0 = time.perf_counter()
        data = collect_labels(teacher, behaviour, rules, args.labels, weights=args.weights,
                              num_games=args.games, seed=args.seed, follow=args.follow,
                              progress=not args.no_progress, values=args.values, last_deal=args.last_deal,
                              stock=args.stock)
        wall = time.perf_counter() - t0
        save_labels(args.out, data, rules, teacher=args.teacher, behaviour=list(args.behaviour),
                    weights=args.weights, follow=args.follow, seed=args.seed, wall_s=wall,
                    last_deal=args.last_deal, stock=args.stock)
    except (ValueError, OSError) as e:  # a bad spec or rules, an unwritable --out
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted; nothing written", file=sys.stderr)
        return 130
    print(f"wrote {len(data['action'])} labels to {args.out} in {wall:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
