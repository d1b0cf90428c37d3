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
from collections import defaultdict

from escoba_env.cli import OneLineParser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CSV = os.path.join(ROOT, "agents", "pretrained", "escoba_2p_plain_eval.csv")
DEFAULT_THEN = os.path.join(ROOT, "agents", "pretrained", "escoba_2p_endgame_eval.csv")
"""The shipped agent's two stages: the plain network, then its fine-tuning with endgame features."""
DEFAULT_OUT = os.path.join(ROOT, "docs", "learning_curve.png")


def read_evals(path: str) -> dict[str, dict[str, list[float]]]:
    """Return {baseline: {"step", "wall_s", "mean", "lo", "hi": lists}} from a metrics CSV."""
    rows: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            tag = r["tag"]
            if not tag.startswith("eval/vs_"):
                continue
            name = tag[len("eval/vs_"):]
            kind = "mean"
            for suffix in ("_lo", "_hi"):
                if name.endswith(suffix):
                    name, kind = name[: -len(suffix)], suffix[1:]
            entry = rows[(name, int(r["step"]))]
            entry[kind] = float(r["value"])
            entry["wall_s"] = float(r["wall_s"])
    out: dict[str, dict[str, list[float]]] = {}
    for (name, step), e in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        d = out.setdefault(name, {"step": [], "wall_s": [], "mean": [], "lo": [], "hi": []})
        d["step"].append(step)
        for k in ("wall_s", "mean", "lo", "hi"):
            d[k].append(e.get(k, float("nan")))
    return out


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


def plot(evals: dict[str, dict[str, list[float]]], out: str, title: str, mark: float | None = None,
         mark_label: str = "") -> None:
    """Draw the curves of ``evals`` into the PNG ``out`` (a dashed line at wall time ``mark`` seconds,
    labelled ``mark_label``); return None."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    colors = {"greedy": "tab:blue", "expert": "tab:red"}
    for name, d in evals.items():
        minutes = [w / 60 for w in d["wall_s"]]
        c = colors.get(name, None)
        ax.plot(minutes, d["mean"], marker="o", ms=3, label=f"vs {name}", color=c)
        ax.fill_between(minutes, d["lo"], d["hi"], alpha=0.25, color=c, linewidth=0)
    ax.axhline(0.0, color="black", lw=0.8)
    if mark is not None:
        ax.axvline(mark / 60, color="gray", ls="--", lw=1)
        ax.annotate(mark_label, (mark / 60, 0.02), xycoords=("data", "axes fraction"), rotation=90,
                    ha="right", va="bottom", fontsize=8, color="dimgray")
    ax.set_xlabel("training wall time (minutes)")
    ax.set_ylabel("points per round, learner minus baseline")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    first = next(iter(evals.values()), None)
    if first and len(first["step"]) > 1 and first["wall_s"][-1] > 0:
        # Top axis: env steps, placed at the wall time each step count was reached (explicit ticks
        # on a twin axis; matplotlib's secondary_xaxis misplaces piecewise-linear conversions).
        import numpy as np

        minutes = np.asarray(first["wall_s"]) / 60
        steps = np.asarray(first["step"]) / 1e6
        top = ax.twiny()
        top.set_xlim(ax.get_xlim())
        ticks = matplotlib.ticker.MaxNLocator(nbins=8).tick_values(0, steps[-1])
        ticks = ticks[(ticks >= 0) & (ticks <= steps[-1])]
        top.set_xticks(np.interp(ticks, steps, minutes))
        top.set_xticklabels([f"{t:g}" for t in ticks])
        top.set_xlabel("env steps (millions)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


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
