"""Plot the learning curve of a phase-gated checkpoint's midgame (or endgame) network.

``agents.training.solo_fit`` stores, in the checkpoint it writes, one row per epoch (the training loss
and, with ``--test``, the held-out share of decisions where the network picks one of the teacher's
best actions and its mean regret in points). This draws the held-out regret per epoch and, as
horizontal lines, the regret of other agents on the same held-out decisions (computed here), so
the curve reads against the expert's level::

    python scripts/plot_solo_curve.py                     # the shipped neural-solo's midgame network
    python scripts/plot_solo_curve.py --checkpoint runs/mid.pt --out curve.png --agents expert greedy
"""

from __future__ import annotations

import os
import sys

import numpy as np

from agents.nets.neural import load_checkpoint
from agents.spec.registry import make_agent
from agents.training.distill import action_regret
from agents.training.solo_fit import prepare
from escoba_env.faces.cli import OneLineParser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CKPT = os.path.join(ROOT, "agents", "pretrained", "escoba_2p_solo.pt")
PLAIN = "agents/pretrained/escoba_2p_plain.pt"
DEFAULT_OUT = os.path.join(ROOT, "docs", "figures", "solo_midgame_curve.png")


def agent_regret(spec: str, d: dict, rules) -> float:
    """Return the mean regret (teacher's points) of agent ``spec`` on prepared held-out decisions ``d``;
    decisions where it names an action the teacher did not value (another card of a capture
    option) are left out."""
    act = make_agent(spec, rules=rules, seed=0).act_batch(d["obs"], d["mask"])
    return float(np.nanmean(action_regret(d["values"], d["mask"], act)))


def main(argv: list[str] | None = None) -> int:
    """Draw the curve; return the exit code."""
    ap = OneLineParser(prog=os.path.basename(__file__), description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=DEFAULT_CKPT,
                    help="a checkpoint written by agents.training.solo_fit")
    ap.add_argument("--phase", choices=("midgame", "endgame", "table", "last"), default="midgame",
                    help="which network's curve: neural-solo's midgame or endgame network, or the move "
                         "(table) or last-deal (last) network of a 3-player or 2v2 checkpoint "
                         "(agents.nets.tablenet)")
    ap.add_argument("--test", default=None, help="held-out labels for the reference lines "
                                                 "(default: the --test file the training recorded)")
    ap.add_argument("--agents", nargs="*", default=None,
                    help="agents whose held-out regret is drawn as reference lines (default: expert and "
                         "the plain network: the 2-player one, or with --phase table the table's network "
                         "the checkpoint keeps)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="the PNG to write")
    args = ap.parse_args(argv)
    try:
        ckpt = load_checkpoint(args.checkpoint)
        keys = {"midgame": "midgame_training", "endgame": "solo_training", "table": "move_training",
                "last": "last_training"}
        key = keys[args.phase]
        how = ckpt.get(key) or {}
        if args.agents is None:
            plain = how.get("plain") if args.phase == "table" else None
            if args.phase == "last":  # the move network the last-deal network was fitted beside
                plain = how.get("base") or ckpt.get("move_training", {}).get("plain")
            args.agents = ["expert", f"checkpoint:{plain or os.path.join(ROOT, PLAIN)}"]
        curve = [row for row in how.get("curve", []) if "regret" in row]
        if not curve:
            raise ValueError(f"{args.checkpoint} records no held-out {args.phase} curve "
                             f"(train with python -m agents.training.solo_fit --test)")
        test = args.test or how.get("test")
        refs = {}
        if args.agents:
            if not test:
                raise ValueError("no held-out labels for the reference agents: pass --test")
            from escoba_env.rulebook.rules import Rules

            rules = Rules.from_dict(ckpt["rules"])
            d = prepare([test], rules, phase=args.phase,
                        answers=args.phase == "last" and ckpt.get("last_inputs") == "answers")
            refs = {spec: agent_regret(spec, d, rules) for spec in args.agents}
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
        net = {"table": "move", "last": "last-deal"}.get(args.phase, args.phase)
        ax.plot([r["epoch"] for r in curve], [r["regret"] for r in curve], "o-", color="C0",
                label=f"{net} network ({how['decisions']:,} training decisions)"
                if isinstance(how.get("decisions"), int) else f"{net} network")
        for i, (spec, v) in enumerate(refs.items()):
            name = spec.removeprefix("checkpoint:").rsplit("/", 1)[-1]
            ax.axhline(v, color=f"C{i + 1}", ls="--", label=f"{name}: {v:.4f}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("held-out regret (teacher's points per decision)")
        what = (f"the {net} network" if args.phase in ("table", "last")
                else f"neural-solo's {args.phase} network")
        ax.set_title(f"{what}: regret against the teacher's values")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        fig.savefig(args.out)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
