"""How many decisions the shipped networks make differently in fixed point than with the float32
forward pass they used before, over a benchmark deal set.

Each shipped network plays its table's deal set (``bench-v1`` at 2 players and 2v2, ``bench-v2`` at
3 players; ``--deals N``: the first N) once, single rounds, in every seat: its fixed-point moves
(``agents.nets.fixedpoint``, what it plays now) drive the games, and at every decision the move the
float32 forward pass picks on this machine is computed too. A decision that differs is an **exact
tie** when the two actions are worth the same to the bit in fixed point (a symmetric network's two
suit-permuted moves): the float32 pass split such ties by rounding noise, so which one it played
depended on the machine; the others are near-ties that the two computations round apart (their gap
in fixed point is printed). It also counts the decisions whose best action is tied exactly with
another (what the float32 pass decided by rounding, whichever way it went on this machine). Prints one
row per network; ``--json`` writes them.

    nice python benchmarks/fixed_point_moves.py --deals 500
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout

from agents import make_agent  # noqa: E402
from agents.bench.protocol import protocol  # noqa: E402
from agents.heuristic.endgame import endgame_rows  # noqa: E402
from agents.moves import best_per_row, move_actions  # noqa: E402
from agents.nets.fixedpoint import move_values, policy_logits  # noqa: E402
from agents.nets.neural import NeuralAgent  # noqa: E402
from agents.nets.solo import SoloAgent, endgame_inputs, symmetric_values  # noqa: E402
from agents.nets.tablenet import TableNetAgent, input_blocks, table_inputs  # noqa: E402
from agents.worlds import observation_scalars  # noqa: E402
from escoba_env import EscobaEngine  # noqa: E402
from escoba_env.executors.observation import action_masks, encode  # noqa: E402
from escoba_env.faces.cli import OneLineParser, guarded_main, positive_int  # noqa: E402

NETWORKS = {"neural-2p": ("v1", "2p"), "neural-2p-plain": ("v1", "2p"), "neural-solo": ("v1", "2p"),
            "neural-3p": ("v2", "3p"), "neural-3p-move": ("v2", "3p"), "neural-2v2": ("v1", "2v2"),
            "neural-2v2-move": ("v1", "2v2")}
"""The shipped networks and the deal set (protocol version, table) each is measured on."""


def _moves_scored(moves, values: np.ndarray, obs, masks) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's action (the first action of its best move) and every action's best value."""
    acts = move_actions(moves, best_per_row(moves, values), obs, masks)
    per_move = move_actions(moves, np.arange(len(values)), obs[moves.row], masks[moves.row])
    best = np.full((len(obs), masks.shape[1]), -np.inf)
    np.maximum.at(best, (moves.row, per_move), values)
    return acts, best


def decide(agent, obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (fixed-point actions, float32 actions, fixed-point value of every action) of the rows."""
    fixed, old = np.zeros(len(obs), np.int64), np.zeros(len(obs), np.int64)
    value = np.full(masks.shape, -np.inf)
    for rows, kind, net, inputs in _parts(agent, obs):
        if not rows.size:
            continue
        o, m = obs[rows], masks[rows]
        if kind == "policy":
            logits = np.where(m > 0, policy_logits(net, o, net.features(o)), -np.inf)
            f = net.features(o)
            ft = None if f is None else torch.from_numpy(f)
            with torch.no_grad():
                ref, _ = net(torch.from_numpy(o), torch.from_numpy(m), ft)
            fixed[rows], old[rows], value[rows] = logits.argmax(1), ref.numpy().argmax(1), logits
            continue
        if inputs == "endgame":
            moves, x, _ = endgame_inputs(o, agent.rules, m)
        elif inputs == "midgame":
            moves, x, _ = agent.midgame_features(o, agent.rules, m)
        else:
            moves, x, _ = table_inputs(o, agent.rules, m, answers=inputs == "answers")
        blocks = input_blocks(inputs)
        sym = getattr(agent, "symmetric", False)
        new = (agent.move_values(x, net, blocks) if isinstance(agent, TableNetAgent) else
               move_values(net, x)).numpy()
        with torch.no_grad():
            xt = torch.from_numpy(x)
            ref = (symmetric_values(net, xt, blocks) if sym else net(xt)).numpy().astype(np.float64)
        fixed[rows], value[rows] = _moves_scored(moves, new, o, m)
        old[rows] = move_actions(moves, best_per_row(moves, ref), o, m)
    return fixed, old, value


def _parts(agent, obs: np.ndarray):
    """Return the (rows, kind, network, input set) each part of ``obs`` is decided by."""
    every = np.arange(len(obs))
    if isinstance(agent, NeuralAgent):
        return [(every, "policy", agent.net, None)]
    if isinstance(agent, SoloAgent):
        late = endgame_rows(obs, agent.rules)
        early = (np.flatnonzero(~late), "policy", agent.plain.net, None) if agent.midgame is None else \
            (np.flatnonzero(~late), "move", agent.midgame, "midgame")
        return [early, (np.flatnonzero(late), "move", agent.endgame, "endgame")]
    if agent.last is None:
        return [(every, "move", agent.net, "table")]
    late = observation_scalars(obs, agent.rules)["stock"] == 0
    return [(np.flatnonzero(~late), "move", agent.net, "table"),
            (np.flatnonzero(late), "move", agent.last, agent.last_inputs)]


def measure(spec: str, deals: int | None, chunk: int = 250) -> dict:
    """Play the network's deal set in every seat; return its decision counts."""
    version, table = NETWORKS[spec]
    p = protocol(version)
    t = p.table(table)
    n = t.deals if deals is None else min(deals, t.deals)
    agent = make_agent(spec, rules=t.rules(), seed=0)
    out = {"spec": spec, "deals": f"bench-{version} {table}, deals 0-{n - 1}", "decisions": 0, "tied": 0,
           "differ": 0, "exact_ties": 0, "near_gaps": []}
    t0 = time.process_time()
    for lo in range(0, n, chunk):
        ids = np.arange(lo, min(n, lo + chunk))
        eng = EscobaEngine(len(ids), t.rules(), single_round=True)
        eng.reset(p.seed(table), game_ids=ids)
        while not eng.done.all():
            live = np.flatnonzero(~eng.done)
            seats = eng.to_act[live]
            obs, masks = encode(eng, seats, live), action_masks(eng, seats, live)
            fixed, old, value = decide(agent, obs, masks)
            diff = np.flatnonzero(fixed != old)
            out["decisions"] += len(live)
            top = value.max(axis=1, keepdims=True)
            out["tied"] += int(((value == top).sum(axis=1) > 1).sum())  # two actions worth the same
            out["differ"] += len(diff)
            for i in diff:
                gap = value[i, fixed[i]] - value[i, old[i]]
                if gap == 0:
                    out["exact_ties"] += 1
                else:
                    out["near_gaps"].append(float(gap))
            actions = np.zeros(len(ids), np.int64)
            actions[live] = fixed
            eng.step(actions, active=~eng.done)
    out["cpu_s"] = round(time.process_time() - t0, 1)
    return out


def main(argv: list[str] | None = None) -> None:
    """Measure each network; print a row for each."""
    ap = OneLineParser(prog="fixed_point_moves.py", description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+", choices=list(NETWORKS), default=list(NETWORKS))
    ap.add_argument("--deals", type=positive_int, help="the first N deals of each set (default: all)")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    print("| network | deals | decisions | best move tied exactly | differ | of which exact ties | "
          "other gaps |")
    print("|---|---|---:|---:|---:|---:|---|")
    for spec in args.networks:
        r = measure(spec, args.deals)
        rows.append(r)
        gaps = ", ".join(f"{g:.1e}" for g in sorted(r["near_gaps"], key=abs)) or "none"
        print(f"| `{spec}` | {r['deals']} | {r['decisions']} | {r['tied']} | {r['differ']} | "
              f"{r['exact_ties']} | {gaps} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    raise SystemExit(guarded_main("fixed_point_moves.py", main))
