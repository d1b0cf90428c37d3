"""PPO fine-tuning of ``neural-solo``'s midgame network by play: the policy-gradient route of the
2-player goal (beat ``hybrid`` with a network only), next to fitting a search teacher's values.
Tried and not shipped (the shipped networks are fitted to search labels, ``agents.training.solo_fit``).

The learner is the midgame network of a phase-gated checkpoint (``--init``, default the shipped
``neural-solo``). While the stock lasts it plays a move drawn from the softmax of its move values
over ``--tau`` points (the values are in points a round, so ``tau`` is how close two moves' values
must be for both to be tried); the checkpoint's endgame network plays the empty stock, as in the
shipped agent, and is not trained. Every iteration plays ``--pairs`` duplicate deals: each deal
twice, the learner in either seat, against the same opponent, drawn per deal from ``--opponents``
(registry specs, with ``--weights``; ``self`` is a frozen copy of the learner, refreshed every
``--snapshot`` iterations). A decision's return is the learner's round point difference summed over
both games of its deal, so the luck of the deal cancels (a decision cannot change the other game, so
this adds no bias), less the mean return against the same opponent in the batch. The update is
PPO's clipped objective on those decisions (``--epochs`` passes, ``--batch`` decisions a step, Adam
at ``--lr``).

Every ``--eval-every`` iterations the learner plays its argmax against the starting network and
against ``expert`` on ``--eval-pairs`` fixed duplicate deals (seed ``--eval-seed``, never a
training seed), and the line is printed and kept in the checkpoint's ``midgame_training.curve``
(``lab/plot_solo_pg.py`` draws it). ``--out`` (never an existing file) is written at every
evaluation and at the end, so a run stopped by Ctrl-C (exit 130) or SIGTERM (exit 143) keeps its last
evaluated network::

    python -m lab.solo_pg --out runs/solo_pg.pt --iterations 200 --pairs 256 \\
        --opponents self neural-solo expert --weights 0.5 0.3 0.2

``checkpoint:runs/solo_pg.pt`` then plays it (``evaluate.py --vs checkpoint:runs/solo_pg.pt
--agents hybrid``).
"""

from __future__ import annotations

import copy
import os
import signal
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from agents.base import Agent
from agents.heuristic.endgame import endgame_rows
from agents.moves import best_per_row, lowest_card, masks_to_uint64, move_actions
from agents.nets.neural import load_checkpoint, save_checkpoint
from agents.nets.solo import EndgameNet, SoloAgent, midgame_inputs, solo_checkpoint_dict
from agents.spec.registry import make_agent
from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.observation import action_masks, encode
from escoba_env.faces.cli import OneLineParser, positive_float, positive_int, seed_arg

SOLO_CHECKPOINT = "neural-solo"
"""Default ``--init``: the shipped agent (a registry name or a checkpoint file)."""


@dataclass
class Decisions:
    """The learner's sampled midgame decisions of one iteration (only those with 2+ moves)."""

    x: list[np.ndarray] = field(default_factory=list)
    """Inputs of every move, one array per engine step (float32, moves x inputs)."""
    count: list[np.ndarray] = field(default_factory=list)
    """Moves of each decision."""
    chosen: list[np.ndarray] = field(default_factory=list)
    """Index of the sampled move within its decision."""
    logp: list[np.ndarray] = field(default_factory=list)
    """Log-probability of the sampled move under the acting network."""
    game: list[np.ndarray] = field(default_factory=list)
    """Engine game of each decision."""

    def stacked(self) -> dict[str, np.ndarray]:
        """Return the decisions as flat arrays (``start``: offsets of each decision's moves in ``x``)."""
        count = np.concatenate(self.count) if self.count else np.zeros(0, np.int64)
        return {"x": np.concatenate(self.x) if self.x else np.zeros((0, 0), np.float32),
                "count": count, "start": np.concatenate([[0], np.cumsum(count)]).astype(np.int64),
                "chosen": np.concatenate(self.chosen) if self.chosen else np.zeros(0, np.int64),
                "logp": np.concatenate(self.logp) if self.logp else np.zeros(0),
                "game": np.concatenate(self.game) if self.game else np.zeros(0, np.int64)}


def segment_log_softmax(logits: torch.Tensor, seg: torch.Tensor, n: int) -> torch.Tensor:
    """Return the log-softmax of ``logits`` within each segment (``seg``: segment id of each entry)."""
    top = torch.full((n,), -torch.inf, dtype=logits.dtype).scatter_reduce(
        0, seg, logits, reduce="amax", include_self=True)
    z = torch.exp(logits - top[seg])
    total = torch.zeros(n, dtype=logits.dtype).index_add(0, seg, z)
    return logits - top[seg] - torch.log(total[seg])


def _sample(moves, values: np.ndarray, tau: float, rng: np.random.Generator | None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Return (flat index of the chosen move per row, its log-probability): the argmax when ``rng`` is
    None (log-probability 0), else a draw from the softmax of ``values / tau`` (Gumbel-max)."""
    if rng is None:
        return best_per_row(moves, values), np.zeros(len(moves.start) - 1)
    logits = values.astype(np.float64) / tau
    chosen = best_per_row(moves, logits + rng.gumbel(size=len(logits)))
    seg = torch.as_tensor(moves.row, dtype=torch.int64)
    logp = segment_log_softmax(torch.as_tensor(logits), seg, len(moves.start) - 1).numpy()
    return chosen, logp[chosen]


def play(learner: SoloAgent, opponents: list[Agent], opponent_of_deal: np.ndarray, seed: int,
         tau: float = 0.1, rng: np.random.Generator | None = None,
         record: Decisions | None = None) -> np.ndarray:
    """Play one duplicate round per deal (``len(opponent_of_deal)`` deals, game ids ``0..``): game
    ``2d`` with the learner in seat 0, game ``2d + 1`` in seat 1, both against
    ``opponents[opponent_of_deal[d]]``. Return the learner's round point difference of every game.

    While the stock lasts the learner's midgame network samples its moves (``rng``; the argmax
    without one) and ``record`` receives the decisions; at an empty stock the learner plays as the
    agent does. Deals come from ``seed`` alone.
    """
    rules = learner.rules
    deals = len(opponent_of_deal)
    n = 2 * deals
    eng = EscobaEngine(n, rules, single_round=True)
    eng.reset(seed, game_ids=np.repeat(np.arange(deals, dtype=np.int64), 2))
    seat = np.tile(np.array([0, 1], np.int64), deals)
    opp = np.repeat(np.asarray(opponent_of_deal, np.int64), 2)
    option = np.zeros(n, np.uint64)
    points = np.zeros((n, 2))
    net = learner.midgame
    with torch.no_grad():
        while not eng.done.all():
            live = np.flatnonzero(~eng.done)
            to_act = eng.to_act[live]
            obs = encode(eng, to_act, live)
            masks = action_masks(eng, to_act, live)
            act = np.zeros(n, np.int64)
            mine = to_act == seat[live]
            for k, agent in enumerate(opponents):
                rows = np.flatnonzero(~mine & (opp[live] == k))
                if rows.size:
                    act[live[rows]] = agent.act_batch(obs[rows], masks[rows])
            rows = np.flatnonzero(mine)
            late = endgame_rows(obs[rows], rules)
            pending = eng.pending[live[rows]] >= 0
            end = rows[late]
            if end.size:
                act[live[end]] = learner.act_batch(obs[end], masks[end])
            cont = rows[~late & pending]  # a capture choice: go on with the sampled move's option
            if cont.size:
                take = lowest_card(option[live[cont]] & masks_to_uint64(masks[cont]))
                if (take < 0).any():
                    raise RuntimeError("internal error: a sampled move has no legal capture choice left")
                act[live[cont]] = take
            new = rows[~late & ~pending]
            if new.size:
                moves, x, _ = midgame_inputs(obs[new], rules, masks[new], inputs=learner.midgame_inputs)
                values = net(torch.from_numpy(x)).numpy()
                chosen, logp = _sample(moves, values, tau, rng)
                act[live[new]] = move_actions(moves, chosen, obs[new], masks[new])
                option[live[new]] = moves.option[chosen]
                count = moves.count
                keep = count > 1
                if record is not None and keep.any():
                    first = moves.start[:-1]
                    record.x.append(x[np.repeat(keep, count)])
                    record.count.append(count[keep])
                    record.chosen.append((chosen - first)[keep])
                    record.logp.append(logp[keep])
                    record.game.append(live[new][keep])
            info = eng.step(act)
            points += info.round_points
    own = points[np.arange(n), seat]
    return own - points[np.arange(n), 1 - seat]


def duplicate_returns(diff: np.ndarray) -> np.ndarray:
    """Return, per game, the learner's point difference summed over both games of its deal."""
    pair = diff.reshape(-1, 2).sum(axis=1)
    return np.repeat(pair, 2)


def advantages(returns: np.ndarray, opponent: np.ndarray, game: np.ndarray) -> np.ndarray:
    """Return each decision's advantage: its game's duplicate return less the mean return of the games
    against the same opponent (so a strong opponent does not read as bad moves), over the batch's
    standard deviation. ``returns`` and ``opponent`` are per game, ``game`` per decision."""
    base = np.zeros_like(returns)
    for k in np.unique(opponent):
        base[opponent == k] = returns[opponent == k].mean()
    adv = (returns - base)[game]
    return adv / (adv.std() + 1e-8)


def ppo_update(net: EndgameNet, opt: torch.optim.Optimizer, d: dict[str, np.ndarray], adv: np.ndarray,
               tau: float, epochs: int, batch: int, clip: float, rng: np.random.Generator
               ) -> dict[str, float]:
    """Run PPO's clipped policy update on decisions ``d`` (``Decisions.stacked``) with advantages
    ``adv`` (one per decision); return the mean loss, clip fraction and entropy of the last epoch."""
    k = len(d["count"])
    x = torch.from_numpy(d["x"])
    start, count = d["start"], d["count"]
    stats: dict[str, float] = {}
    for _ in range(epochs):
        order = rng.permutation(k)
        losses, clipped, entropy = [], [], []
        for i in range(0, k, batch):
            dec = order[i:i + batch]
            c = count[dec]
            seg = np.repeat(np.arange(len(dec)), c)
            rows = np.repeat(start[dec], c) + (np.arange(c.sum()) - np.repeat(np.cumsum(c) - c, c))
            logp_all = segment_log_softmax(net(x[rows]) / tau, torch.from_numpy(seg), len(dec))
            logp = logp_all[torch.from_numpy(np.cumsum(c) - c + d["chosen"][dec])]
            ratio = torch.exp(logp - torch.from_numpy(d["logp"][dec]).float())
            a = torch.from_numpy(adv[dec]).float()
            loss = -torch.minimum(ratio * a, torch.clamp(ratio, 1 - clip, 1 + clip) * a).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                losses.append(float(loss))
                clipped.append(float(((ratio - 1).abs() > clip).float().mean()))
                p = torch.exp(logp_all)
                ent = torch.zeros(len(dec)).index_add(0, torch.from_numpy(seg), -p * logp_all)
                entropy.append(float(ent.mean()))
        stats = {"loss": float(np.mean(losses)), "clip": float(np.mean(clipped)),
                 "entropy": float(np.mean(entropy))}
    return stats


def evaluate_vs(learner: SoloAgent, opponent: Agent, pairs: int, seed: int) -> tuple[float, float]:
    """Return (mean, 95% half-width) of the learner's points per round (argmax play) against
    ``opponent`` over ``pairs`` duplicate deals (each deal counted once, as its two rounds' mean)."""
    diff = play(learner, [opponent], np.zeros(pairs, np.int64), seed, rng=None)
    per_deal = diff.reshape(-1, 2).mean(axis=1)
    return float(per_deal.mean()), float(1.96 * per_deal.std(ddof=1) / np.sqrt(max(pairs, 1)))


def _frozen(agent: SoloAgent, name: str) -> SoloAgent:
    """Return a copy of ``agent`` whose networks do not change with the learner's."""
    out = copy.deepcopy(agent)
    out.name = name
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line (module doc); return the exit code."""
    ap = OneLineParser(prog="python -m lab.solo_pg",
                       description="PPO fine-tuning of neural-solo's midgame network by duplicate play")
    ap.add_argument("--init", default=SOLO_CHECKPOINT,
                    help="phase-gated checkpoint with a midgame network (default: the shipped neural-solo)")
    ap.add_argument("--out", default=None, help="write the fine-tuned checkpoint here (never overwrites)")
    ap.add_argument("--iterations", type=positive_int, default=100)
    ap.add_argument("--pairs", type=positive_int, default=256, help="duplicate deals per iteration")
    ap.add_argument("--opponents", nargs="+", default=["self", "neural-solo", "expert"],
                    help="registry specs, or self (a frozen copy of the learner)")
    ap.add_argument("--weights", type=positive_float, nargs="+", default=None,
                    help="share of deals per opponent (default: equal)")
    ap.add_argument("--snapshot", type=positive_int, default=10,
                    help="iterations between refreshes of the 'self' opponent")
    ap.add_argument("--tau", type=positive_float, default=0.05, help="softmax temperature, points")
    ap.add_argument("--lr", type=positive_float, default=1e-5)
    ap.add_argument("--epochs", type=positive_int, default=2)
    ap.add_argument("--batch", type=positive_int, default=1024, help="decisions per PPO step")
    ap.add_argument("--clip", type=positive_float, default=0.2)
    ap.add_argument("--seed", type=seed_arg, default=0)
    ap.add_argument("--eval-every", type=positive_int, default=10)
    ap.add_argument("--eval-pairs", type=positive_int, default=1000)
    ap.add_argument("--eval-seed", type=seed_arg, default=1_000_003)
    args = ap.parse_args(argv)
    weights = args.weights or [1.0] * len(args.opponents)
    if len(weights) != len(args.opponents):
        print(f"error: {len(weights)} --weights for {len(args.opponents)} --opponents", file=sys.stderr)
        return 2
    if args.out and os.path.exists(args.out):
        print(f"error: {args.out} already exists; choose another --out", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    written = False
    stopped_by: list[int] = []

    def stop(signum, frame):  # SIGTERM ends the run like Ctrl-C: the last evaluated network is kept
        stopped_by.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        if args.out:  # a folder that cannot be made fails now, not after the training
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        if os.path.exists(args.init):
            learner = SoloAgent.from_checkpoint(args.init, seed=args.seed)
        elif args.init.endswith(".pt"):
            raise ValueError(f"--init: checkpoint not found: {args.init!r}")
        else:
            learner = make_agent(args.init, seed=args.seed)
        if not isinstance(learner, SoloAgent) or learner.midgame is None:
            raise ValueError(f"--init {args.init!r} is not a phase-gated agent with a midgame network")
        learner = _frozen(learner, "learner")
        start = _frozen(learner, "start")
        rules = learner.rules
        opponents = [start if s == "self" else make_agent(s, rules=rules, seed=args.seed + 1 + i)
                     for i, s in enumerate(args.opponents)]
        is_self = [s == "self" for s in args.opponents]
        expert = make_agent("expert", rules=rules, seed=args.seed)
        share = np.asarray(weights, np.float64) / sum(weights)
        net = learner.midgame  # an MLP without dropout or batch norm: no train / eval modes to switch
        base = load_checkpoint(args.init) if os.path.exists(args.init) else {}
        kept = {k: base[k] for k in ("solo_training",) if k in base}
        if learner.midgame_inputs != "plain":
            kept["midgame_inputs"] = learner.midgame_inputs
        opt = torch.optim.Adam(net.parameters(), lr=args.lr)
        rng = np.random.default_rng(args.seed)
        curve: list[dict[str, float]] = []

        def save() -> None:
            nonlocal written
            if not args.out:
                return
            if os.path.exists(args.out) and not written:
                raise ValueError(f"{args.out} appeared during training; choose another --out")
            how = {"method": "ppo", "init": args.init, "iterations": curve[-1]["iteration"],
                   "pairs": args.pairs, "opponents": list(args.opponents),
                   "weights": [float(w) for w in weights], "tau": args.tau, "lr": args.lr,
                   "epochs": args.epochs, "batch": args.batch, "clip": args.clip, "seed": args.seed,
                   "eval_pairs": args.eval_pairs, "eval_seed": args.eval_seed, "curve": curve}
            save_checkpoint(args.out, solo_checkpoint_dict(learner.plain, learner.endgame, midgame=net,
                                                           midgame_training=how, **kept))
            written = True

        def evaluate(it: int, t0: float) -> None:
            v0, h0 = evaluate_vs(learner, start, args.eval_pairs, args.eval_seed)
            v1, h1 = evaluate_vs(learner, expert, args.eval_pairs, args.eval_seed)
            curve.append({"iteration": it, "rounds": it * 2 * args.pairs, "vs_start": v0, "vs_start_ci": h0,
                          "vs_expert": v1, "vs_expert_ci": h1, "wall_s": time.perf_counter() - t0})
            print(f"eval it {it}: vs start {v0:+.3f} +- {h0:.3f}, vs expert {v1:+.3f} +- {h1:.3f} "
                  f"({2 * args.eval_pairs} rounds each)", flush=True)
            save()

        t0 = time.perf_counter()
        evaluate(0, t0)
        for it in range(1, args.iterations + 1):
            rec = Decisions()
            which = rng.choice(len(opponents), size=args.pairs, p=share)
            diff = play(learner, opponents, which, seed=int(rng.integers(2**31)), tau=args.tau, rng=rng,
                        record=rec)
            d = rec.stacked()
            adv = advantages(duplicate_returns(diff), np.repeat(which, 2), d["game"])
            stats = ppo_update(net, opt, d, adv, args.tau, args.epochs, args.batch, args.clip, rng)
            per = {s: float(diff.reshape(-1, 2).mean(axis=1)[which == i].mean())
                   for i, s in enumerate(args.opponents) if (which == i).any()}
            scores = ", ".join(f"{s} {v:+.2f}" for s, v in per.items())
            print(f"it {it}: {len(d['count'])} decisions, loss {stats['loss']:+.4f}, "
                  f"clip {stats['clip']:.3f}, entropy {stats['entropy']:.3f}, points/round {scores}, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
            if it % args.snapshot == 0 and any(is_self):
                fresh = _frozen(learner, "self")
                opponents = [fresh if s else o for s, o in zip(is_self, opponents, strict=True)]
            if it % args.eval_every == 0 or it == args.iterations:
                evaluate(it, t0)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = f"; {args.out} holds the last evaluated network" if written else "; nothing written"
        how = "terminated" if stopped_by else "interrupted"
        print(f"error: {how}{kept}", file=sys.stderr)
        return 143 if stopped_by else 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
