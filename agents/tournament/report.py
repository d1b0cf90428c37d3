"""Tournament output: the terminal table, the JSON and CSV result files, and the PNG plot."""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path, PurePath

import numpy as np

from ..external.llm import total_usage, usage_lines
from .analysis import RATING_MODEL
from .runner import TournamentRun

PACKAGES = ("escoba-env", "numpy", "gymnasium", "pettingzoo", "torch", "openskill", "tqdm", "matplotlib",
            "ray")


def machine() -> dict:
    """Return what a run was measured on."""
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version()}


def escoba_version(root: Path | None = None) -> str | None:
    """Return escoba-env's version: the checkout's ``escoba_env.__version__`` (the one constant its
    ``pyproject.toml`` reads) when the package runs from a checkout (``root``: the folder above the
    package; an editable install's metadata keeps the version it was installed at), else the installed
    distribution's (None when neither says)."""
    base = Path(__file__).resolve().parents[2] if root is None else Path(root)
    try:
        text = (base / "pyproject.toml").read_text(encoding="utf-8")
        init = (base / "escoba_env" / "__init__.py").read_text(encoding="utf-8")
    except OSError:
        text = init = ""
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if project and re.search(r'^name\s*=\s*"escoba-env"', project.group(1), re.M):
        found = re.search(r'^__version__\s*=\s*"([^"]+)"', init, re.M)
        if found:
            return found.group(1)
    try:
        return metadata.version("escoba-env")
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """Return the Python version and the version of each relevant package (None: absent);
    escoba-env's is ``escoba_version()``."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for p in PACKAGES:
        if p == "escoba-env":
            out[p] = escoba_version()
            continue
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def git_state() -> dict[str, object]:
    """Return the git commit of the source tree and whether it has uncommitted changes."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip() != ""
        return {"commit": commit, "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def json_ready(x):
    """Return ``x`` with NaN/inf floats replaced by None and NumPy scalars by Python ones (for JSON)."""
    if isinstance(x, dict):
        return {k: json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def config_dict(run: TournamentRun) -> dict:
    """Return the full config of a run as plain data."""
    c = run.config
    return {
        "entrants": list(c.entrants), "agents": list(c.agents), "vs": c.vs,
        "rules": c.rules.to_dict(), "mode": "games" if c.games else "rounds",
        "deals_per_lineup": c.deals, "duplicate": c.duplicate,
        "rotations": c.rules.num_sides if c.duplicate else 1,
        "max_rounds": c.max_rounds if c.games else None, "block_deals": c.block_deals,
        "confidence": c.confidence, "workers": c.workers, "backend": c.backend,
        "lineups": [[c.entrants[i] for i in lu] for lu in run.lineups],
        "cheating_agents": list(run.cheating),
    }


def timing_fields(run: TournamentRun, provenance: dict | None = None) -> dict:
    """Return a result file's ``timing`` (this process's wall and CPU seconds; with ``provenance``,
    ``journal.provenance``'s, also how many blocks there are and how many came from the journal)
    and, with ``provenance``, its ``sittings``."""
    timing = {"wall_s": round(run.wall_s, 3), "cpu_s": round(run.cpu_s, 3)}
    if provenance is None:
        return {"timing": timing}
    timing.update(blocks=provenance["blocks"], blocks_resumed=provenance["blocks_resumed"])
    return {"timing": timing, "sittings": provenance["sittings"]}


def results_dict(run: TournamentRun, pairs: list[dict], agents: list[dict], ratings: list[dict],
                 git: dict | None = None, provenance: dict | None = None) -> dict:
    """Return everything a results file holds (config, seeds, versions, commit, statistics).

    ``git``: ``git_state()`` taken when the run started (the source its process loaded); a run of
    hours would otherwise record whatever the checkout holds when it ends. ``provenance``:
    ``journal.provenance``'s, for a run that may have been resumed (``timing`` then covers only the
    last sitting's blocks; ``sittings`` says which source and machine played each part).
    """
    c = run.config
    return json_ready({
        "format": "escoba-evaluation/1",
        "config": config_dict(run),
        "seeds": {"seed": c.seed,
                  "deals": "engine seed = seed; deal d of every lineup is engine game id d",
                  "agents": "agents.tournament.runner.agent_seed(seed, lineup specs, block, position), "
                            "re-seeded at the start of every block"},
        "versions": versions(),
        "git": git_state() if git is None else git,
        **timing_fields(run, provenance),
        "pairs": pairs,
        "agents": agents,
        "ratings": ratings,
        "rating_model": RATING_MODEL,
        **llm_usage_fields(run),
    })


def llm_usage_fields(run: TournamentRun) -> dict:
    """Return ``{"llm_usage": {spec: summary}}`` when language-model agents played, else nothing."""
    usage = total_usage(b for lineup in run.blocks for b in lineup)
    return {"llm_usage": usage} if usage else {}


def _fmt(x: float, spec: str) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def table(run: TournamentRun, pairs: list[dict], agents: list[dict], ratings: list[dict]) -> str:
    """Return the readable results table (pairs, then ratings)."""
    c = run.config
    r = c.rules
    pct = int(round(c.confidence * 100))
    mode = (f"games to {r.target_score}" if c.games else "single rounds")
    dup = f"duplicate ({r.num_sides} seat rotations per deal)" if c.duplicate else "no duplicate"
    lines = [
        f"{len(c.entrants)} agents, {len(run.lineups)} lineups, {r.num_players} players"
        f"{' (2v2 partnerships)' if r.partnerships else ''}, {mode}, {c.deals} deals per lineup, {dup}, "
        f"seed {c.seed}",
    ]
    rows = [["A", "B", "games" if c.games else "rounds", f"A-B points/round [{pct}% CI]",
             f"A win rate [{pct}% CI]", "esc/rd A", "esc/rd B", "A share: cards", "oros", "velo", "sevens"]]
    for p in pairs:
        d, w, s = p["diff"], p["win_rate"], p["category_share"]
        rows.append([p["a"], p["b"], str(p["games"] if c.games else p["rounds"]),
                     f"{_fmt(d['mean'], '+.3f')} [{_fmt(d['lo'], '+.3f')}, {_fmt(d['hi'], '+.3f')}]",
                     f"{_fmt(w['rate'], '.3f')} [{_fmt(w['lo'], '.3f')}, {_fmt(w['hi'], '.3f')}]",
                     _fmt(p["escobas_per_round"]["a"], ".3f"), _fmt(p["escobas_per_round"]["b"], ".3f"),
                     *(_fmt(s[k], ".3f") for k in ("cards", "oros", "velo", "sevens"))])
    lines += _align(rows, right_from=2)
    unit = "games" if c.games else "rounds"
    lines.append(f"A-B: CI paired over deals. Win rate: share of {unit} in which A's side scored more "
                 f"than B's (ties half), Wilson interval.")
    lines.append("esc/rd: escobas per round. A share: A's part of the category points won by A or B.")
    ppr = {a["agent"]: a for a in agents}
    lines.append("")
    rows = [["rank", "agent", "rating mu", "sigma", f"{pct}% interval", "points/round", "rounds"]]
    for i, rt in enumerate(ratings, start=1):
        a = ppr[rt["agent"]]
        rows.append([str(i), rt["agent"], f"{rt['mu']:.2f}", f"{rt['sigma']:.2f}",
                     f"[{rt['lo']:.2f}, {rt['hi']:.2f}]", _fmt(a["points_per_round"], ".3f"),
                     str(a["rounds"])])
    lines += _align(rows, right_from=2)
    lines.append("rating: OpenSkill Plackett-Luce (no drift, tau = 0) over every deal of every lineup")
    for spec in run.cheating:
        lines.append(f"* {spec} sees the hidden cards: a CHEATING upper-bound reference, not a fair opponent")
    usage = llm_usage_fields(run).get("llm_usage")
    if usage:
        lines += ["", "language models:", *usage_lines(usage)]
    return "\n".join(lines)


def _align(rows: list[list[str]], right_from: int) -> list[str]:
    """Return the rows as aligned text lines (columns from ``right_from`` right-aligned)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [v.ljust(w) if i < right_from else v.rjust(w)
                 for i, (v, w) in enumerate(zip(r, widths, strict=True))]
        out.append("  ".join(cells).rstrip())
    return out


PAIR_FIELDS = ("a", "b", "lineups", "deals", "games", "rounds", "diff_mean", "diff_lo", "diff_hi",
               "win_rate", "win_lo", "win_hi", "wins", "draws", "losses", "points_per_round_a",
               "points_per_round_b", "escobas_per_round_a", "escobas_per_round_b", "share_cards",
               "share_oros", "share_velo", "share_sevens", "truncated")
RATING_FIELDS = ("agent", "mu", "sigma", "lo", "hi", "ordinal", "points_per_round", "escobas_per_round",
                 "rounds", "games")


def write_csv(path: Path, pairs: list[dict], agents: list[dict], ratings: list[dict]) -> tuple[Path, Path]:
    """Write ``<path>_pairs.csv`` and ``<path>_ratings.csv``; return both paths."""
    p_path = path.with_name(path.name + "_pairs.csv")
    r_path = path.with_name(path.name + "_ratings.csv")
    with open(p_path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(PAIR_FIELDS)
        for p in pairs:
            s = p["category_share"]
            w.writerow([p["a"], p["b"], p["lineups"], p["deals"], p["games"], p["rounds"],
                        p["diff"]["mean"], p["diff"]["lo"], p["diff"]["hi"], p["win_rate"]["rate"],
                        p["win_rate"]["lo"], p["win_rate"]["hi"], p["win_rate"]["wins"],
                        p["win_rate"]["draws"], p["win_rate"]["losses"], p["points_per_round"]["a"],
                        p["points_per_round"]["b"], p["escobas_per_round"]["a"], p["escobas_per_round"]["b"],
                        s["cards"], s["oros"], s["velo"], s["sevens"], p["truncated"]])
    stats = {a["agent"]: a for a in agents}
    with open(r_path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(RATING_FIELDS)
        for r in ratings:
            a = stats[r["agent"]]
            w.writerow([r["agent"], r["mu"], r["sigma"], r["lo"], r["hi"], r["ordinal"],
                        a["points_per_round"], a["escobas_per_round"], a["rounds"], a["games"]])
    return p_path, r_path


def write_json(path: Path, results: dict) -> Path:
    """Write the results dict as ``<path>.json``; return the path."""
    out = path.with_name(path.name + ".json")
    out.write_text(json.dumps(results, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return out


def plot_labels(specs: list[str], width: int = 26) -> list[str]:
    """Return short, distinct plot labels for agent specs.

    A checkpoint is named by the shortest end of its path that tells it apart from the other
    checkpoints (``neural agent.pt``, ``neural demo/…/latest.pt``), never by the start of its path
    (``checkpoint:../ru..`` says nothing); other specs longer than ``width`` keep their start.
    """
    paths = {s: PurePath(s.partition(":")[2].split(",")[0]).parts for s in specs
             if s.startswith("checkpoint:") and s.partition(":")[2]}
    out = []
    for s in specs:
        if s in paths:
            parts = paths[s]
            k = 1
            while k < len(parts) and any(o != s and paths[o][-k:] == parts[-k:] for o in paths):
                k += 1
            tail = "/".join(parts[-k:]) if k <= 2 else f"{parts[-k]}/…/{parts[-1]}"
            label = "neural " + (tail if len(tail) <= width - 7 else "…" + tail[-(width - 8):])
        else:
            label = s if len(s) <= width else s[:width - 1] + "…"
        out.append(label)
    return out


def write_plot(path: Path, run: TournamentRun, pairs: list[dict], ratings: list[dict]) -> Path:
    """Write ``<path>.png``: the pairwise points-difference matrix and the ratings with intervals."""
    import matplotlib  # the [agents] extra: loaded only to draw

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # the [agents] extra

    ent = list(run.config.entrants)
    n = len(ent)
    pct = int(round(run.config.confidence * 100))
    mat = np.full((n, n), np.nan)
    half = np.full((n, n), np.nan)
    for p in pairs:
        i, j = ent.index(p["a"]), ent.index(p["b"])
        m, lo, hi = p["diff"]["mean"], p["diff"]["lo"], p["diff"]["hi"]
        mat[i, j], mat[j, i] = m, -m
        half[i, j] = half[j, i] = (hi - lo) / 2
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(6 + 1.3 * n, 1.8 + 0.8 * n),
                                   gridspec_kw={"width_ratios": [1.3, 1]})
    lim = np.nanmax(np.abs(mat)) if np.isfinite(mat).any() else 1.0
    im = ax0.imshow(mat, cmap="RdBu", vmin=-lim, vmax=lim)
    for i in range(n):
        for j in range(n):
            if np.isfinite(mat[i, j]):
                dark = abs(mat[i, j]) > 0.6 * lim
                ax0.text(j, i, f"{mat[i, j]:+.2f}\n±{half[i, j]:.2f}", ha="center", va="center", fontsize=8,
                         color="white" if dark else "black")
    labels = dict(zip(ent, plot_labels(ent), strict=True))
    short = [labels[e] for e in ent]
    ax0.set_xticks(range(n), short, rotation=30, ha="right")
    ax0.set_yticks(range(n), short)
    ax0.set_title(f"row minus column: points/round ({pct}% CI)")
    fig.colorbar(im, ax=ax0, shrink=0.8)
    names = [r["agent"] for r in ratings][::-1]
    mu = np.array([r["mu"] for r in ratings])[::-1]
    lo = np.array([r["lo"] for r in ratings])[::-1]
    hi = np.array([r["hi"] for r in ratings])[::-1]
    ax1.errorbar(mu, range(len(names)), xerr=[mu - lo, hi - mu], fmt="o", capsize=4)
    ax1.set_yticks(range(len(names)), [labels.get(e, e) for e in names])
    ax1.set_xlabel(f"OpenSkill rating mu ({pct}% interval)")
    ax1.set_title("ratings")
    ax1.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    out = path.with_name(path.name + ".png")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
