"""The report card: one agent against a protocol's panel on the table's frozen deal set.

The card is a ``--vs SPEC`` tournament (``agents.tournament``) against the panel (the panel minus
SPEC itself if SPEC is a panel member), every deal played from every seat rotation, single rounds.
It holds:

- per panel member, SPEC's points-per-round difference with its interval paired over deals, and
  SPEC's win rate (the tournament's pair statistics);
- the **headline**: SPEC's *margin*, its points per round minus the mean points per round of the
  other sides at its table, averaged over the panel's lineups with equal weight; the interval is
  paired over deals (every lineup plays the same deals, so one deal's margins over all lineups form
  one sample);
- an OpenSkill rating **on the panel's scale**: the panel members keep the ratings of the panel's
  own round robin on the same deals (``escoba-bench panel``, a reference file shipped with the
  package) and only SPEC's rating is fitted; without a reference file the rating is fitted with
  the panel and the card says ``"anchored": false``. The card keeps every deal's points per round
  (``per_deal``), so the leaderboard fits the rating again once a reference exists;
- SPEC's decision time (mean and 95th percentile, one game at a time, in this process);
- the protocol version, the deal set's digest, the project version, the spec and the machine;
- ``agent_code``: the fingerprint of whatever the spec loads from outside the project (a
  ``python:`` agent's source and weights, a checkpoint's bytes: ``agents.spec.fingerprint``), so two
  cards under one spec can be told apart.

Before the first block the table's deals are dealt with today's engine and checked against the
digest the protocol pins (``protocol.check_deals``): an engine that deals otherwise is refused.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path

import numpy as np

from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.observation import action_masks, encode

from ..external.llm import usage_lines
from ..spec.fingerprint import spec_fingerprint
from ..spec.registry import Spec, read_spec
from ..tournament import analysis, report, runner
from ..tournament.analysis import RATING_MODEL
from ..tournament.journal import Journal, journal_path, new_sitting, provenance, run_key
from ..tournament.play import seat_positions
from ..tournament.report import escoba_version, json_ready, llm_usage_fields, machine, timing_fields, versions
from ..tournament.runner import TournamentConfig, TournamentRun, build_agent
from ..tournament.signals import SIGNALS
from ..tournament.stats import group_sums, mean_ci, z_value
from .protocol import check_deals, deal_set_digest, protocol

CARD_FORMAT = "escoba-bench-card/1"
PANEL_FORMAT = "escoba-bench-panel/1"
HEADLINE = ("margin: the agent's points per round minus the mean points per round of the other sides "
            "at its table, averaged over the panel's lineups with equal weight (at 2 sides a panel "
            "member's match against itself counts 0), every deal played from every seat rotation; "
            "interval paired over deals")
DATA = Path(__file__).with_name("data")
"""The panels' reference ratings (``bench-<version>-<table>-panel.json``)."""


def card_config(spec: str | Spec, version: str = "v1", table: str = "2p", *, quick: bool = False,
                workers: int = 1, backend: str = "local", ray_address: str | None = None) -> TournamentConfig:
    """Return the tournament a card plays: ``spec`` against the table's panel on its deal set (the panel
    without ``spec``'s agent, however it is spelt: ``search:sims=400`` is the panel's ``search``)."""
    p = protocol(version)
    t = p.table(table)
    spec = read_spec(spec)
    panel = tuple(a for a in map(read_spec, t.panel) if a.canonical != spec.canonical)
    return TournamentConfig(agents=panel, vs=spec, rules=t.rules(),
                            deals=t.quick_deals if quick else t.deals, seed=p.seed(table),
                            block_deals=t.block_deals, workers=workers, backend=backend,
                            ray_address=ray_address, orders=t.orders)


def panel_config(version: str = "v1", table: str = "2p", *, quick: bool = False,
                 workers: int = 1) -> TournamentConfig:
    """Return the panel's own round robin on the table's deal set (the reference of the rating scale)."""
    p = protocol(version)
    t = p.table(table)
    return TournamentConfig(agents=t.panel, rules=t.rules(), deals=t.quick_deals if quick else t.deals,
                            seed=p.seed(table), block_deals=t.block_deals, workers=workers,
                            orders=t.orders)


def panel_reference_path(version: str, table: str, quick: bool = False) -> Path:
    """Return the shipped reference file of a panel (``-quick`` for the quick subset)."""
    v = protocol(version).version
    return DATA / f"bench-{v}-{table}-panel{'-quick' if quick else ''}.json"


def headline(per_deal: dict, spec: str, panel: tuple[str, ...], confidence: float = 0.95,
             member: bool | None = None) -> dict:
    """Return the card's headline margin (module docstring) from its per-deal points per round.

    Per lineup and deal: SPEC's points per round minus the mean of the other sides' (SPEC is the
    first agent of every lineup); per deal the mean over lineups; the interval over deals. With 2
    sides a panel member's mirror match counts 0 (its expected margin, by symmetry), so that every
    2-side headline averages over the whole panel. ``member``: whether SPEC is one of the panel, played
    without its mirror match (default: SPEC is written as in ``panel``).
    """
    per_lineup = []
    for lu, x in zip(per_deal["lineups"], per_deal["points_per_round"], strict=True):
        x = np.asarray(x, np.float64)
        if lu[0] != spec:
            raise ValueError(f"lineup {lu} does not start with {spec!r}")
        per_lineup.append(x[:, 0] - x[:, 1:].mean(axis=1))
    samples = np.mean(np.stack(per_lineup), axis=0)
    if len(per_deal["lineups"][0]) == 2 and (spec in panel if member is None else member):
        samples = samples * (len(panel) - 1) / len(panel)
    mean, lo, hi = mean_ci(samples, confidence)
    return {"name": "margin", "mean": mean, "lo": lo, "hi": hi, "confidence": confidence,
            "definition": HEADLINE}


def per_deal_points(run: TournamentRun) -> dict:
    """Return, per lineup, every deal's points per round of each of the lineup's agents (kept in the
    card, so its rating can be fitted again on another reference scale without playing again)."""
    ent = run.config.entrants
    lineups, values = [], []
    for lineup, blocks in zip(run.lineups, run.blocks, strict=True):
        d = analysis.lineup_arrays(blocks)
        agents = list(dict.fromkeys(lineup))  # order of play (v1's lineups are increasing indices)
        cols = []
        for a in agents:
            pa = [k for k, e in enumerate(lineup) if e == a]
            pts = group_sums(d["points"][:, pa].mean(axis=1), d["deal"])
            cols.append(pts / group_sums(d["rounds"], d["deal"]))
        lineups.append([ent[a] for a in agents])
        values.append(np.round(np.stack(cols, axis=1), 6).tolist())
    return {"lineups": lineups, "points_per_round": values,
            "layout": "points_per_round[lineup][deal][agent of that lineup]"}


def feed(model, ratings: dict, matches: list, fixed: set = frozenset()) -> None:
    """Update ``ratings`` in place with one OpenSkill match per deal and lineup, deal-major, ranked by
    points per round (equal points tie), as ``agents.tournament.analysis.fit_ratings`` feeds a
    tournament; ``matches``: (agent names, (deals, agents) points per round) per lineup; agents in
    ``fixed`` never move."""
    for deal in range(matches[0][1].shape[0]):
        for agents, x in matches:
            score = x[deal]
            ranks = [int((score > s).sum()) + 1 for s in score]
            new = model.rate([[ratings[a]] for a in agents], ranks=ranks)
            for a, team in zip(agents, new, strict=True):
                if a not in fixed:
                    ratings[a] = team[0]


def anchored_rating(per_deal: dict, spec: str, reference: dict[str, dict] | None,
                    confidence: float = 0.95) -> dict:
    """Return SPEC's OpenSkill rating from a card's per-deal points, the panel held at ``reference``.

    Matches are fed as ``agents.tournament.analysis.fit_ratings`` feeds them (one per deal and
    lineup, deal-major, ranked by points per round); panel members with a reference rating never
    move. ``reference`` None: every rating is fitted (``anchored`` false).
    """
    from openskill.models import PlackettLuce  # the [agents] extra: loaded when ratings are fitted

    m = RATING_MODEL
    model = PlackettLuce(mu=m["mu"], sigma=m["sigma"], beta=m["beta"], tau=m["tau"])
    names = [spec] + sorted({a for lu in per_deal["lineups"] for a in lu} - {spec})
    ratings, fixed = {}, set()
    for name in names:
        ref = (reference or {}).get(name) if name != spec else None
        if ref is not None:
            ratings[name] = model.rating(mu=ref["mu"], sigma=ref["sigma"], name=name)
            fixed.add(name)
        else:
            ratings[name] = model.rating(name=name)
    data = [(lu, np.asarray(x, np.float64)) for lu, x in
            zip(per_deal["lineups"], per_deal["points_per_round"], strict=True)]
    feed(model, ratings, data, fixed)
    r = ratings[spec]
    z = z_value(confidence)
    return {"mu": float(r.mu), "sigma": float(r.sigma), "lo": float(r.mu - z * r.sigma),
            "hi": float(r.mu + z * r.sigma), "anchored": reference is not None,
            "panel": {a: {"mu": float(ratings[a].mu), "sigma": float(ratings[a].sigma)}
                      for a in names[1:]}}


def decision_times(spec: str | Spec, config: TournamentConfig, deals: int = 8) -> dict:
    """Return SPEC's decision time in ms (mean, p95, count): one game at a time against the first
    panel member, on the first ``deals`` deals of the set, SPEC in every seat rotation."""
    rules = config.rules
    me = build_agent(spec, rules, seed=1)
    other = build_agent(config.agents[0], rules, seed=2)
    times = []
    for deal in range(-1, deals):  # deal -1: a warm-up game of deal 0, not timed (first-call costs)
        for rot in range(rules.num_sides):
            pos = seat_positions(rules, np.array([rot]))[0]
            e = EscobaEngine(1, rules, single_round=True)
            e.reset(config.seed, game_ids=np.array([max(deal, 0)]))
            g = np.zeros(1, np.int64)
            while not e.done[0]:
                seat = e.to_act[g]
                agent = me if pos[int(seat[0])] == 0 else other
                state = (e, g) if agent.needs_state else None
                t0 = time.perf_counter()
                a = agent.act_batch(encode(e, seat, g), action_masks(e, seat, g), state)
                dt = time.perf_counter() - t0
                if agent is me and deal >= 0:
                    times.append(dt * 1000.0)
                e.step(np.asarray(a, np.int64))
    t = np.asarray(times)
    return {"mean_ms": float(t.mean()), "p95_ms": float(np.percentile(t, 95)), "decisions": int(t.size),
            "how": "one game at a time, one process, batch of one observation per call"}


def project_version() -> str | None:
    """Return escoba-env's version: the checkout's when it runs from one, else the installed one
    (``agents.tournament.report.escoba_version``)."""
    return escoba_version()


def card_dict(run: TournamentRun, version: str, table: str, quick: bool,
              reference: dict[str, dict] | None, times: dict | None, git: dict | None = None,
              provenance: dict | None = None) -> dict:
    """Return the card of a played card tournament (plain data, JSON-ready); ``git``: the source
    state taken when the run started (default: now); ``provenance``: ``play``'s, for a card that
    may have been finished from a journal (its ``timing`` then covers only this sitting's blocks,
    and ``sittings`` says where every part was played)."""
    c = run.config
    spec = c.vs
    pairs = analysis.pair_stats(run)
    opponents = []
    for pr in pairs:
        if pr["a"] != spec and pr["b"] != spec:
            continue
        flip = pr["b"] == spec
        d = pr["diff"]
        w = pr["win_rate"]
        diff = {"mean": -d["mean"], "lo": -d["hi"], "hi": -d["lo"]} if flip else dict(d)
        win = ({"rate": 1 - w["rate"], "lo": 1 - w["hi"], "hi": 1 - w["lo"], "wins": w["losses"],
                "draws": w["draws"], "losses": w["wins"], "n": w["n"]} if flip else dict(w))
        ppr = pr["points_per_round"]
        opponents.append({"opponent": pr["a"] if flip else pr["b"], "deals": pr["deals"],
                          "rounds": pr["rounds"], "diff": diff, "win_rate": win,
                          "points_per_round": {"agent": ppr["b"] if flip else ppr["a"],
                                               "opponent": ppr["a"] if flip else ppr["b"]}})
    p = protocol(version)
    per_deal = per_deal_points(run)
    return json_ready({
        "format": CARD_FORMAT,
        "protocol": f"bench-{p.version}",
        "benchmark": not quick,
        "quick": quick,
        "note": ("--quick: the first deals of the set, for development; not the benchmark" if quick
                 else "the full deal set"),
        "table": table,
        "agent": spec,
        "panel": list(c.agents),
        "deal_set": {"seed": c.seed, "deals": c.deals, "rotations": c.rules.num_sides,
                     "digest": deal_set_digest(version, table, c.deals), "rules": c.rules.to_dict(),
                     "block_deals": c.block_deals, **({"orders": c.orders} if c.orders > 1 else {})},
        "headline": headline(per_deal, spec, p.table(table).panel, c.confidence,
                             member=len(c.agents) < len(p.table(table).panel)),
        "opponents": opponents,
        "rating": anchored_rating(per_deal, spec, reference, c.confidence),
        "decision_time": times,
        "agent_code": spec_fingerprint(c.vs),
        "project_version": project_version(),
        "versions": versions(),
        "git": report.git_state() if git is None else git,
        "machine": machine(),
        **timing_fields(run, provenance),
        **llm_usage_fields(run),
        "per_deal": per_deal,
    })


def slug(spec: str) -> str:
    """Return a file-name-safe form of an agent spec."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_") or "agent"


_NUMBERS = re.compile(r"\[\s*(-?[0-9][-+0-9.eE]*(?:,\s*-?[0-9][-+0-9.eE]*)*)\s*\]")
"""A JSON list of numbers only, as ``json.dumps(indent=2)`` spreads it over lines."""


def _one_line(m: re.Match) -> str:
    return "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]"


def write_atomic(path: Path, data: dict) -> Path:
    """Write ``data`` as JSON to ``path`` through a temporary file and a rename (never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(_NUMBERS.sub(_one_line, json.dumps(data, indent=2, allow_nan=False)) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def load_reference(version: str, table: str, quick: bool) -> dict[str, dict] | None:
    """Return the shipped panel ratings {spec: {mu, sigma}} for the card's deals, or None if absent."""
    path = panel_reference_path(version, table, quick)
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != PANEL_FORMAT:
        raise ValueError(f"{path}: not a panel reference file")
    return {r["agent"]: {"mu": r["mu"], "sigma": r["sigma"]} for r in data["ratings"]}


def play(config: TournamentConfig, out: Path, *, resume: bool, overwrite: bool, progress: bool,
         source: dict | None = None):
    """Play ``config`` with the tournament journal next to ``out`` (resumable); return ``(run,
    journal, provenance)``.

    Refuses before playing if ``out`` exists (unless ``overwrite``), or if an unfinished journal
    exists and neither ``resume`` nor ``overwrite`` is given. The journal notes this *sitting* (the
    process's ``source`` git state, machine, start time and the blocks already finished), so a run
    finished in several sittings (other days, commits or machines) can say where each part was
    played. ``provenance``: ``{"blocks", "blocks_resumed", "sittings"}``, every sitting with the
    blocks it played (blocks before the first noted sitting were played by sittings that noted
    nothing: journals of earlier versions).
    """
    cheating = runner.prepare_agents(config)
    if out.exists() and not overwrite:
        raise ValueError(f"{out} already exists: pass --overwrite to replace it, or choose another --out")
    jpath = journal_path(out.with_suffix(""))
    if jpath.exists() and not resume and not overwrite:
        raise ValueError(f"{jpath} holds an unfinished run: pass --resume to finish it "
                         "(or --overwrite to start again)")
    journal = Journal(jpath, run_key(config, record=False))
    finished = journal.load() if resume else []
    out.parent.mkdir(parents=True, exist_ok=True)
    total = len(runner.make_tasks(config))
    kept = len(finished)
    sitting = new_sitting(report.git_state() if source is None else source, kept)
    journal.start(resume, sitting)

    def on_block(block) -> None:
        nonlocal kept
        with SIGNALS.held():  # written and counted together: the final message counts right
            journal.add(block)
            kept += 1

    try:
        run = runner.run_tournament(config, progress=progress, on_block=on_block, finished=finished,
                                    cheating=cheating)
    except BaseException as exc:
        journal.close()
        exc.escoba_note = (f"; {kept} of {total} blocks finished, kept in {jpath}: run the same command "
                           "with --resume to finish")
        raise
    journal.close()
    return run, journal, provenance(journal.sittings, sitting, total)


def run_card(spec: str | Spec, *, version: str = "v1", table: str = "2p", quick: bool = False,
             out: str | Path | None = None, resume: bool = False, overwrite: bool = False,
             workers: int = 1, progress: bool = False, timing_deals: int = 8) -> tuple[dict, Path]:
    """Play and write a report card; return (card, path). Refuses before playing an engine that
    deals the table's set otherwise than the protocol pins."""
    check_deals(version, table, quick)
    config = card_config(spec, version, table, quick=quick, workers=workers)
    spec = config.vs  # read once, by card_config
    path = Path(out) if out else default_out(spec, version, table, quick)
    if path.suffix != ".json":
        raise ValueError(f"--out must name a .json file, got {str(path)!r}")
    reference = load_reference(version, table, quick)
    source = report.git_state()  # the source this process loaded: a card plays for hours
    run, journal, provenance = play(config, path, resume=resume, overwrite=overwrite, progress=progress,
                                    source=source)
    model = spec.name == "llm"  # its calls' latencies are on the card: no extra games
    times = decision_times(spec, config, timing_deals) if timing_deals and not model else None
    card = card_dict(run, version, table, quick, reference, times, git=source, provenance=provenance)
    write_atomic(path, card)
    journal.remove()
    return card, path


def run_panel(*, version: str = "v1", table: str = "2p", quick: bool = False, out: str | Path | None = None,
              resume: bool = False, overwrite: bool = False, workers: int = 1,
              progress: bool = False) -> tuple[dict, Path]:
    """Play the panel's round robin and write its reference ratings; return (data, path)."""
    check_deals(version, table, quick)
    config = panel_config(version, table, quick=quick, workers=workers)
    path = Path(out) if out else panel_reference_path(version, table, quick)
    run, journal, provenance = play(config, path, resume=resume, overwrite=overwrite, progress=progress)
    data = json_ready({"format": PANEL_FORMAT, "protocol": f"bench-{protocol(version).version}",
                       "table": table, "quick": quick, "deals": config.deals,
                       "digest": deal_set_digest(version, table, config.deals),
                       "ratings": analysis.fit_ratings(run), "pairs": analysis.pair_stats(run),
                       "project_version": project_version(), "machine": machine(),
                   **timing_fields(run, provenance)})
    write_atomic(path, data)
    journal.remove()
    return data, path


def default_out(spec: str, version: str, table: str, quick: bool, directory: str | Path = "results") -> Path:
    """Return a card's file name in ``directory``: ``bench-<v>-<table>-<spec>[-quick].json`` (the
    default ``--out`` under ``results/``, and where the leaderboard keeps it)."""
    v = protocol(version).version
    return Path(directory) / f"bench-{v}-{table}-{slug(spec)}{'-quick' if quick else ''}.json"


def headline_text(card: dict) -> str:
    """Return the card as a short terminal table."""
    h = card["headline"]
    lines = [f"{card['protocol']} {card['table']} card of {card['agent']}"
             + ("  (--quick: NOT the benchmark)" if card["quick"] else ""),
             f"deal set: {card['deal_set']['deals']} deals x {card['deal_set']['rotations']} rotations, "
             f"digest {card['deal_set']['digest'][:16]}",
             f"headline margin: {_f(h['mean'])} [{_f(h['lo'])}, {_f(h['hi'])}] points per round",
             "", f"{'opponent':<16} {'diff':>8} {'95% CI':>18} {'win rate':>9}"]
    for o in card["opponents"]:
        d, w = o["diff"], o["win_rate"]
        ci = f"[{_f(d['lo'])}, {_f(d['hi'])}]"
        lines.append(f"{o['opponent']:<16} {_f(d['mean']):>8} {ci:>18} {w['rate']:>9.3f}")
    r = card["rating"]
    lines.append("")
    lines.append(f"rating (OpenSkill mu, {'panel anchored' if r['anchored'] else 'not anchored'}): "
                 f"{r['mu']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]")
    t = card.get("decision_time")
    if t:
        lines.append(f"decision time: mean {t['mean_ms']:.2f} ms, p95 {t['p95_ms']:.2f} ms "
                     f"({t['decisions']} decisions)")
    if card.get("llm_usage"):
        lines += ["", "language model:", *usage_lines(card["llm_usage"])]
    return "\n".join(lines)


def _f(x) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.3f}"



def panel_from_cards(cards: list[dict], version: str, table: str, quick: bool) -> dict:
    """Return the panel's reference ratings fitted from the panel members' own cards (no play).

    The cards of the panel members hold, between them, every pair of the panel on the same deals:
    the union of their lineups is the panel's round robin. Each set of agents counts once (from
    the card of the member that comes first in the panel's order), in each order of play the
    protocol plays (bench-v2 at 3 players: both).
    """
    from openskill.models import PlackettLuce  # the [agents] extra: loaded when ratings are fitted

    p = protocol(version)
    t = p.table(table)
    by_agent = {c["agent"]: c for c in cards if c["protocol"] == f"bench-{p.version}"
                and c["table"] == table and c["quick"] == quick}
    missing = [a for a in t.panel if a not in by_agent]
    if missing:
        raise ValueError(f"no card of panel member(s) {', '.join(missing)} for bench-{p.version} {table}"
                         f"{' --quick' if quick else ''}")
    seen, matches = set(), []
    for a in t.panel:
        pd = by_agent[a]["per_deal"]
        for lu, x in zip(pd["lineups"], pd["points_per_round"], strict=True):
            if not set(lu) <= set(t.panel):
                continue
            # one match per set of agents; with both orders of play, one per order (a rotation of
            # a lineup is the same order of play)
            i = lu.index(min(lu))
            key = frozenset(lu) if t.orders == 1 else tuple(lu[i:] + lu[:i])
            if key in seen:
                continue
            seen.add(key)
            matches.append((lu, np.asarray(x, np.float64)))
    m = RATING_MODEL
    model = PlackettLuce(mu=m["mu"], sigma=m["sigma"], beta=m["beta"], tau=m["tau"])
    ratings = {a: model.rating(name=a) for a in t.panel}
    feed(model, ratings, matches)
    z = z_value(0.95)
    rows = [{"agent": a, "mu": float(r.mu), "sigma": float(r.sigma), "lo": float(r.mu - z * r.sigma),
             "hi": float(r.mu + z * r.sigma)} for a, r in ratings.items()]
    rows.sort(key=lambda r: -r["mu"])
    return {"format": PANEL_FORMAT, "protocol": f"bench-{p.version}", "table": table, "quick": quick,
            "deals": t.quick_deals if quick else t.deals, "source": "the panel members' cards",
            "ratings": rows}
