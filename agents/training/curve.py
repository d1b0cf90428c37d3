"""A training run's learning curve: its evaluation rows read from ``metrics.csv`` and drawn as a PNG.

``write_curve(run_dir)`` is what ``escoba-train`` calls at the end of a run (``learning_curve.png``
beside ``metrics.csv``); ``scripts/plot_learning_curve.py`` draws the shipped agent's curve with
the same two functions.
"""

from __future__ import annotations

import csv
import os
from collections import defaultdict

import numpy as np


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


def plot(evals: dict[str, dict[str, list[float]]], out: str, title: str, mark: float | None = None,
         mark_label: str = "") -> None:
    """Draw the curves of ``evals`` into the PNG ``out`` (a dashed line at wall time ``mark`` seconds,
    labelled ``mark_label``); return None."""
    import matplotlib  # the [agents] extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # the [agents] extra

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


def write_curve(run_dir: str, title: str = "escoba-train: duplicate evaluation (95% CI)") -> str | None:
    """Write ``run_dir/learning_curve.png`` from ``run_dir/metrics.csv``; return its path, or None when
    the run has no evaluation rows (``--eval-interval 0``) or matplotlib is missing."""
    src = os.path.join(run_dir, "metrics.csv")
    if not os.path.exists(src):
        return None
    evals = read_evals(src)
    if not evals:
        return None
    out = os.path.join(run_dir, "learning_curve.png")
    try:
        plot(evals, out, title)
    except ImportError:
        return None
    return out
