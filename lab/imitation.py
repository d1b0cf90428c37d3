"""Fine-tune a trained agent on teacher labels by imitation alone, and score it against expert.

Tried and not shipped: no shipped network is fine-tuned this way.

The experiment behind the model card's "imitating search" figures: cross-entropy toward the
teacher's choices (``hard``), toward ``softmax(values / param)`` of its per-action rollout values
(``soft``, needs labels collected with ``--values``), or toward its choice only where it beats
the next action by more than ``param`` points (``confident``, needs ``--values``). After every
epoch the network plays ``--deals`` duplicate deals against expert (with 3 players: one network
against two experts; with partnerships: a team against a team), and ``--save PATH`` exports it.

    python -m agents.training.distill --out runs/labels/search_q.npz --labels 60000 --values --seed 31 \\
        --behaviour neural-2p-plain expert greedy --weights 0.5 0.35 0.15
    python -m lab.imitation runs/labels/search_q.npz --mode confident --param 0.6 --epochs 3 \\
        --lr 1e-4
"""

from __future__ import annotations

import copy
import os

import numpy as np
import torch

from agents.heuristic.expert import ExpertAgent
from agents.nets.neural import NeuralAgent, checkpoint_dict, save_checkpoint
from agents.nets.shipped import PLAIN_CHECKPOINT
from agents.tournament.duplicate import play_duplicate
from agents.training.distill import load_labels
from escoba_env.faces.cli import OneLineParser


def targets(arrays: dict[str, np.ndarray], mode: str, param: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (rows kept, target distributions (K, W)) for an imitation ``mode``."""
    act, n = arrays["action"], len(arrays["action"])
    if mode == "hard":
        t = np.zeros(arrays["mask"].shape, np.float32)
        t[np.arange(n), act] = 1.0
        return np.arange(n), t
    if "values" not in arrays:
        raise SystemExit(f"--mode {mode} needs labels collected with --values")
    v = arrays["values"]
    top = np.sort(np.where(np.isfinite(v), v, -1e9), axis=1)
    if mode == "soft":
        z = np.exp(np.where(np.isfinite(v), (v - top[:, -1:]) / param, -np.inf))
        return np.arange(n), (z / z.sum(axis=1, keepdims=True)).astype(np.float32)
    keep = np.flatnonzero(top[:, -1] - top[:, -2] > param)
    t = np.zeros(v.shape, np.float32)
    t[np.arange(n), np.argmax(np.where(np.isfinite(v), v, -1e9), axis=1)] = 1.0
    return keep, t


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, fine-tune, print the cross-entropy and the score per epoch."""
    ap = OneLineParser(prog="python -m lab.imitation", description=__doc__.split("\n\n")[0])
    ap.add_argument("labels")
    ap.add_argument("--agent", default=PLAIN_CHECKPOINT,
                    help="checkpoint to start from (default: the shipped network without endgame features)")
    ap.add_argument("--mode", choices=("hard", "soft", "confident"), default="hard")
    ap.add_argument("--param", type=float, default=0.3, help="soft: temperature; confident: margin (points)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--deals", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=2026, help="evaluation seed")
    ap.add_argument("--limit", type=int, default=None, help="use the first N labels only")
    ap.add_argument("--save", metavar="PATH", default=None,
                    help="export the agent after every epoch to PATH_e<epoch>.pt (never overwrites)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    agent = NeuralAgent.from_checkpoint(args.agent)
    arrays, _ = load_labels(args.labels, agent.rules)
    if args.limit is not None:
        arrays = {k: v[: args.limit] for k, v in arrays.items()}
    keep, tgt = targets(arrays, args.mode, args.param)
    print(f"{args.mode} {args.param}: {len(keep)} of {len(arrays['action'])} labels")
    net = agent.net
    obs = arrays["obs"][keep].astype(np.float32)
    o, m = torch.from_numpy(obs), torch.from_numpy(arrays["mask"][keep].astype(np.int8))
    f, t = torch.from_numpy(net.features(obs)), torch.from_numpy(tgt[keep])
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    rng = np.random.default_rng(0)
    expert = ExpertAgent(agent.rules)
    for epoch in range(args.epochs):
        net.train()
        total = 0.0
        for i in torch.from_numpy(rng.permutation(len(keep))).split(512):
            logits, _ = net(o[i], m[i], f[i])
            loss = -(t[i] * torch.log_softmax(logits, -1).clamp_min(-1e4)).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(i)
        net.eval()
        me = NeuralAgent(copy.deepcopy(net), agent.rules, name="imitation")
        seats = [me] + [expert] * (agent.rules.num_sides - 1)  # 3 players: one agent against two experts
        diff = play_duplicate(seats, agent.rules, deals=args.deals, seed=args.seed).diff
        print(f"epoch {epoch}: cross-entropy {total / len(keep):.4f}, vs expert {diff[0]:+.3f} "
              f"[{diff[1]:+.3f}, {diff[2]:+.3f}]", flush=True)
        if args.save:
            out = f"{args.save}_e{epoch}.pt"
            if os.path.exists(out):
                raise SystemExit(f"python -m lab.imitation: {out} already exists; choose "
                                 f"another --save")
            save_checkpoint(out, checkpoint_dict(net, agent.rules))


if __name__ == "__main__":
    main()
