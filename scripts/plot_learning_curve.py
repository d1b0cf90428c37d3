"""Plot a training run's learning curve: points per round against the baselines, with 95% intervals.

Reads the ``metrics.csv`` a run writes (``step, wall_s, tag, value``; the ``eval/vs_<name>``,
``eval/vs_<name>_lo`` and ``eval/vs_<name>_hi`` rows) and draws, for each evaluated baseline, the
duplicate-deal points-per-round difference (learner minus baseline) with its interval band,
against training wall time (bottom axis) and env steps (top axis).

    python scripts/plot_learning_curve.py                       # the shipped agent's curve (2 stages)
    python scripts/plot_learning_curve.py --csv runs/NAME/metrics.csv --out curve.png
    python scripts/plot_learning_curve.py --csv runs/NAME/metrics.csv --keep-evals out.csv

A run started from another one's weights (``--init-from``) can be drawn as its continuation:
``--then CSV`` appends the second run's rows, shifted by the first run's last step and wall time,
and marks where it starts (``--then-label``). The shipped agent's curve is drawn that way.
"""

from __future__ import annotations

import csv
import os

from agents.training.curve import plot, read_evals
from escoba_env.faces.cli import OneLineParser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CSV = os.path.join(ROOT, "agents", "pretrained", "escoba_2p_plain_eval.csv")
DEFAULT_THEN = os.path.join(ROOT, "agents", "pretrained", "escoba_2p_endgame_eval.csv")
"""The shipped agent's two stages: the plain network, then its fine-tuning with endgame features."""
DEFAULT_OUT = os.path.join(ROOT, "docs", "learning_curve.png")


def concatenate(first: dict[str, dict[str, list[float]]], then: dict[str, dict[str, list[float]]]
                ) -> tuple[dict[str, dict[str, list[float]]], float]:
    """Return ``first`` followed by ``then`` shifted past its last step and wall time, and the wall
    time (seconds) where ``then`` starts. A row of ``then`` at its step 0 duplicates the end of
    ``first`` (the same weights) and is dropped."""
    ref = next(iter(first.values()))
    step0, wall0 = ref["step"][-1], ref["wall_s"][-1]
    out = {k: {c: list(v) for c, v in d.items()} for k, d in first.items()}
    for name, d in then.items():
        dst = out.setdefault(name, {"step": [], "wall_s": [], "mean": [], "lo": [], "hi": []})
        for i, step in enumerate(d["step"]):
            if step == 0:
                continue
            dst["step"].append(step + step0)
            dst["wall_s"].append(d["wall_s"][i] + wall0)
            for c in ("mean", "lo", "hi"):
                dst[c].append(d[c][i])
    return out, wall0


def keep_evals(src: str, dst: str) -> None:
    """Copy only the evaluation rows of metrics CSV ``src`` to ``dst`` (small enough to commit)."""
    with open(src, newline="") as f, open(dst, "w", newline="") as g:
        reader = csv.DictReader(f)
        writer = csv.DictWriter(g, fieldnames=reader.fieldnames)
        writer.writeheader()
        for r in reader:
            if r["tag"].startswith("eval/"):
                writer.writerow(r)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments and write the plot (and optionally the evaluation rows); return None."""
    ap = OneLineParser(prog=os.path.basename(__file__), description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=DEFAULT_CSV, help="metrics.csv of a run (or its eval rows)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="PNG to write")
    ap.add_argument("--title", default="PPO self-play, 2 players: duplicate evaluation (95% CI)")
    ap.add_argument("--keep-evals", metavar="CSV", help="also copy the eval rows of --csv to this file")
    ap.add_argument("--then", metavar="CSV", default=None,
                    help="a run started from the first one's weights, drawn as its continuation (default: "
                         "with the default --csv, the shipped agent's second stage)")
    ap.add_argument("--then-label", default=None, help="label of the --then boundary")
    args = ap.parse_args(argv)
    if args.then is None and args.csv == DEFAULT_CSV:
        args.then = DEFAULT_THEN
        if args.then_label is None:
            args.then_label = "+ endgame features"
    if args.then_label is None:
        args.then_label = "continued from here"
    if args.keep_evals:
        keep_evals(args.csv, args.keep_evals)
    evals = read_evals(args.csv)
    if not evals:
        raise SystemExit(f"no eval/vs_* rows in {args.csv}")
    mark = None
    if args.then:
        then = read_evals(args.then)
        if not then:
            raise SystemExit(f"no eval/vs_* rows in {args.then}")
        evals, mark = concatenate(evals, then)
    plot(evals, args.out, args.title, mark, args.then_label)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
