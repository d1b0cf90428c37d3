"""Plot the curve of a midgame network fine-tuned by ``lab.solo_pg``.

The checkpoint keeps one row per evaluation: the learner's points per round (argmax play) against
the network it started from and against ``expert``, each on the same fixed duplicate deals, with
their 95% half-widths. This draws both against the rounds played in training::

    python -m lab.plot_solo_pg --checkpoint runs/solo_pg.pt --out docs/figures/solo_pg_curve.png
"""

from __future__ import annotations

import os
import sys

from agents.nets.neural import load_checkpoint
from escoba_env.faces.cli import OneLineParser


def main(argv: list[str] | None = None) -> int:
    """Draw the curve; return the exit code."""
    ap = OneLineParser(prog=os.path.basename(__file__), description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, help="a checkpoint written by lab.solo_pg")
    ap.add_argument("--out", required=True, help="the PNG to write")
    args = ap.parse_args(argv)
    try:
        how = load_checkpoint(args.checkpoint).get("midgame_training") or {}
        curve = how.get("curve") if how.get("method") == "ppo" else None
        if not curve:
            raise ValueError(f"{args.checkpoint} records no solo_pg curve (write one with "
                             f"python -m lab.solo_pg --out)")
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        x = [row["rounds"] / 1e3 for row in curve]
        fig, ax = plt.subplots(figsize=(7, 4))
        for key, label in (("vs_start", "against the starting network"), ("vs_expert", "against expert")):
            y = [row[key] for row in curve]
            h = [row[f"{key}_ci"] for row in curve]
            ax.plot(x, y, marker="o", label=label)
            low = [a - b for a, b in zip(y, h, strict=True)]
            ax.fill_between(x, low, [a + b for a, b in zip(y, h, strict=True)], alpha=0.2)
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_xlabel("training rounds (thousands)")
        ax.set_ylabel("points per round (argmax play)")
        ax.set_title(f"solo_pg: tau={how['tau']}, lr={how['lr']}, {2 * how['eval_pairs']} evaluation rounds")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.out, dpi=110)
        print(f"wrote {args.out}")
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
