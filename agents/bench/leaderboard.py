"""The leaderboard page: ``docs/leaderboard.md`` generated from the card files kept in the repository.

Every ``benchmarks/leaderboard/*.json`` is a report card (``escoba-bench card``). A file is valid
when it has the card format, a known protocol version and table, and the deal-set digest the
protocol pins (the package's constant, not one recomputed with today's engine). The page lists,
per table, every card sorted by its headline margin (best first), full-set cards and ``--quick``
cards in separate tables. Cards of ``llm`` specs (language models) have their own table per protocol
and table, with their harness settings and how their answers went beside the margin: each row is one
model under one set of settings (the settings are part of the card's fingerprint), never pooled with
another row and never counted among the baselines a version needs to be shown.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..external.llm import HARNESS_SHOWN, is_llm_spec
from ..spec.registry import REGISTRY, parse_spec
from ..tournament.journal import Journal, journal_path, run_key
from ..tournament.runner import make_tasks
from .card import CARD_FORMAT, anchored_rating, card_config, default_out, load_reference
from .protocol import PROTOCOLS, deal_set_digest, pinned_digest, protocol

LEADERBOARD_DIR = Path("benchmarks/leaderboard")
EXPECTED = {
    "2p": ("random", "greedy", "expert", "search", "hybrid", "neural-solo", "neural-2p", "neural-2p-plain"),
    "3p": ("random", "greedy", "expert", "search", "strong-3p", "neural-3p", "neural-3p-move"),
    "2v2": ("random", "greedy", "expert", "search", "strong-2v2", "neural-2v2", "neural-2v2-move"),
}
"""Per table, every baseline and shipped agent the leaderboard holds a card of (``escoba-bench todo``)."""
NOT_CARDED = {
    "oracle": "a cheating reference: it sees the hidden cards",
    "endgame": "expert's midgame with the exact 2-player endgame: a component of hybrid (model card)",
    "openspiel-ismcts": "another library's bot behind an adapter (the [openspiel] extra)",
    "neural": "an alias of neural-2p",
    "hybrid": "at 3p and 2v2 it is strong-3p / strong-2v2 (the same agent, 1,000 rollouts)",
    "checkpoint": "a file, not a shipped agent",
    "sb3": "a file, not a shipped agent",
    "python": "a user's factory, not a shipped agent",
}
"""Registry names without a card at a table they play, and why (a test keeps both lists complete)."""
PAGE = Path("docs/leaderboard.md")
REQUIRED = ("protocol", "table", "agent", "quick", "headline", "opponents", "rating", "deal_set",
            "project_version", "machine", "per_deal")


def validate(card: dict, name: str = "card") -> None:
    """Raise ValueError naming the first thing wrong with a card."""
    if not isinstance(card, dict) or card.get("format") != CARD_FORMAT:
        raise ValueError(f"{name}: not a report card (format {CARD_FORMAT!r} expected)")
    for key in REQUIRED:
        if key not in card:
            raise ValueError(f"{name}: missing field {key!r}")
    p = protocol(card["protocol"])
    t = p.table(card["table"])
    ds = card["deal_set"]
    want = t.quick_deals if card["quick"] else t.deals
    if ds.get("deals") != want:
        raise ValueError(f"{name}: {ds.get('deals')} deals, the protocol's "
                         f"{'quick subset' if card['quick'] else 'set'} has {want}")
    if ds.get("orders", 1) != t.orders:
        raise ValueError(f"{name}: {ds.get('orders', 1)} orders of play, the protocol plays {t.orders}")
    if ds.get("seed") != p.seed(card["table"]):
        raise ValueError(f"{name}: deal seed {ds.get('seed')} is not the protocol's")
    pinned = pinned_digest(card["protocol"], card["table"], card["quick"])
    if pinned is None:  # an unpublished protocol: today's deals are all there is
        pinned = deal_set_digest(card["protocol"], card["table"], want)
    if ds.get("digest") != pinned:
        raise ValueError(f"{name}: deal-set digest {ds.get('digest')} is not the one the protocol pins, "
                         f"{pinned}")
    h = card["headline"]
    for k in ("mean", "lo", "hi"):
        if not isinstance(h.get(k), (int, float)):
            raise ValueError(f"{name}: headline {k} is not a number")
    panel = [a for a in t.panel if a != card["agent"]]
    if sorted(o["opponent"] for o in card["opponents"]) != sorted(panel):
        raise ValueError(f"{name}: opponents are not the protocol's panel {panel}")
    if is_llm_spec(card["agent"]) and "harness" not in (card.get("llm_usage") or {}).get(card["agent"], {}):
        raise ValueError(f"{name}: a language model's card without its usage and harness settings")


def load_cards(directory: Path = LEADERBOARD_DIR) -> list[tuple[Path, dict]]:
    """Return every card file of ``directory`` (sorted by name), each validated."""
    out = []
    for path in sorted(Path(directory).glob("*.json")):
        try:
            card = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
        validate(card, str(path))
        out.append((path, card))
    return out


def _n(x, spec="+.3f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def rating(card: dict) -> dict:
    """Return a card's rating on its panel's reference scale when the package has the reference
    (fitted again from the card's per-deal points), else the card's own rating (a published
    summary row holds the rating already fitted)."""
    if "per_deal" not in card or card["rating"].get("anchored"):
        return card["rating"]
    ref = load_reference(card["protocol"], card["table"], card["quick"])
    if ref is None:
        return card["rating"]
    key = json.dumps([card["protocol"], card["table"], card["quick"], card["agent"], card["headline"], ref],
                     sort_keys=True)
    if key not in _RATINGS:  # fitting a card again takes a while: the page and the summary share it
        _RATINGS[key] = anchored_rating(card["per_deal"], card["agent"], ref)
    return _RATINGS[key]


_RATINGS: dict[str, dict] = {}


def seating_pairs(rows: list[dict]) -> list[dict]:
    """Return, for a 3-side table's cards, every pair of carded agents and third agent that both
    pair members' cards play: the pair's points-per-round difference on each card (over every
    order of play the card has) and whether the two cards seat them in the same orders.

    A card's stored lineups list their agents in seat order (the tournament's lineups are entrant
    indices in order of play, and its rotations keep that order), so the agent that plays right
    after ``a`` in a lineup is the next one in the list, cyclically. ``seating``: ``same``,
    ``opposite``, or ``both`` (both cards play both orders: bench-v2).
    """
    by_agent = {c["agent"]: c["per_deal"] for c in rows if "per_deal" in c}
    out = []

    def diff(pd, a, b, c):
        orders, cols = set(), []
        for lu, x in zip(pd["lineups"], pd["points_per_round"], strict=True):
            if len(lu) == 3 and set(lu) == {a, b, c}:
                orders.add(lu[(lu.index(a) + 1) % 3])
                cols += [row[lu.index(a)] - row[lu.index(b)] for row in x]
        return (frozenset(orders), sum(cols) / len(cols)) if cols else None

    names = [c["agent"] for c in rows if c["agent"] in by_agent]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            thirds = sorted({x for lu in by_agent[a]["lineups"] if b in lu for x in lu} - {a, b})
            for c in thirds:
                da, db = diff(by_agent[a], a, b, c), diff(by_agent[b], a, b, c)
                if da is None or db is None:
                    continue
                seating = ("both" if len(da[0]) == 2 and len(db[0]) == 2
                           else "same" if da[0] == db[0] else "opposite")
                out.append({"a": a, "b": b, "third": c, "on_a": da[1], "on_b": db[1],
                            "same_seating": da[0] == db[0], "seating": seating})
    return out


def _version_number(proto: str) -> int:
    return int(protocol(proto).version[1:])


def render(cards: list[tuple[Path, dict]], source: str = "benchmarks/leaderboard",
           published: list[dict] | None = None) -> str:
    """Return the leaderboard page (Markdown) for the cards of ``source`` (a folder name, as the
    page names it); ``published``: rows of the published leaderboard (``load_published``) to
    compare them with, the cards' own rows marked *(yours)*.

    Per table and kind (full or quick), the page shows the newest protocol version that is
    *complete*, a card of every baseline and shipped agent (``EXPECTED``), and says which: bench-v2
    at 3 players once all its cards are in, bench-v1 until then. A newer version still being carded
    is named with the agents it has cards of; if some of them are the user's own cards
    (``published``), its table is shown too, marked incomplete.
    """
    mine = [c for _, c in cards]
    rows = [dict(c, _yours=published is not None) for c in mine]
    if published:
        have = {(c["protocol"], c["table"], c["quick"], c["agent"]) for c in mine}
        rows += [dict(c, _yours=False) for c in published
                 if (c["protocol"], c["table"], c["quick"], c["agent"]) not in have]
    models = [c for c in rows if is_llm_spec(c["agent"])]
    rows = [c for c in rows if not is_llm_spec(c["agent"])]
    where = f"`{source}/*.json`" + (" and the published leaderboard" if published is not None else "")
    lines = ["# Leaderboard", "",
             f"<!-- generated by `escoba-bench leaderboard` from {where}: do not edit by hand -->", "",
             f"Report cards of the benchmark protocol ([the protocol](benchmark.md)), one row per card "
             f"file in `{source}/`" + (" (marked *yours*) beside the published cards of the escoba-env "
                                       "repository" if published is not None else "")
             + ", sorted by the headline **margin** (points per round over the mean of the other sides "
             "at the table, averaged over the panel; 95% interval paired over deals). Rows marked "
             "*quick* played the protocol's `--quick` subset: they are for development and are not "
             "benchmark results.", ""]
    if not rows and not models:
        lines += ["No cards yet.", ""]
    groups: dict[tuple[str, bool], dict[str, list[dict]]] = {}
    for c in rows:
        version = protocol(c["protocol"]).version
        groups.setdefault((c["table"], c["quick"]), {}).setdefault(version, []).append(c)
    for (table, quick), by_version in sorted(groups.items()):
        kind = "quick " if quick else ""
        complete = [v for v, r in by_version.items() if complete_version(r, table)]
        shown = max(complete or by_version, key=_version_number)
        lines += _table(table, quick, shown, by_version[shown], source)
        older = {v: len(r) for v, r in by_version.items() if _version_number(v) < _version_number(shown)}
        if older:
            lines += ["Shown: bench-" + shown + ". Older versions' cards of this table stay readable in "
                      f"`{source}/` (" + ", ".join(f"bench-{v}: {n}" for v, n in sorted(older.items()))
                      + "), not shown.", ""]
        for v, p in sorted(PROTOCOLS.items(), key=lambda kv: _version_number(kv[0])):
            if table not in p.tables or _version_number(v) <= _version_number(shown):
                continue
            have = sorted({c["agent"] for c in by_version.get(v, [])})
            orders = " (it plays every lineup in both orders of play)" if p.tables[table].orders == 2 else ""
            if not have:
                lines += [f"Shown: bench-{shown}; bench-{v} has no {kind}cards of this table yet{orders}, "
                          f"so the page shows bench-{shown}.", ""]
                continue
            want = [a for a in EXPECTED.get(table, ()) if a not in have]
            lines += [f"Shown: bench-{shown}; bench-{v}{orders} is shown once every baseline and shipped "
                      f"agent has its {kind}card: {len(have)} so far (" + ", ".join(f"`{a}`" for a in have)
                      + "), still to play: " + ", ".join(f"`{a}`" for a in want) + ".", ""]
            if any(c.get("_yours") for c in by_version[v]):
                lines += _table(table, quick, v, by_version[v], source, incomplete=True)
    lines += _llm_tables(models)
    described = sorted({c["agent"] for c in rows if c["agent"] in REGISTRY})
    if described:  # each agent's one-line description, as the registry declares it
        lines += ["The agents:", "", *(f"- `{a}`: {REGISTRY[a].help}" for a in described), ""]
    lines += ["`vs X`: the agent's points per round minus X's, paired over deals (at 3 players under "
              "bench-v1 for the card's one order of play only, so a pair's two cards can disagree; "
              "bench-v2 plays both orders: [the protocol](benchmark.md)'s seating note). `rating`: "
              "OpenSkill mu on the panel's scale (`*`: not anchored, the panel's reference ratings were "
              "missing). `ms/move`: mean decision time, one game at a time, on the machine in the card "
              "file.", ""]
    return "\n".join(lines)


def _llm_tables(models: list[dict]) -> list[str]:
    """Return the language models' tables: per protocol, table and kind, one row per card, its harness
    settings and how its answers went beside its margin (none: no lines)."""
    lines: list[str] = []
    groups: dict[tuple[int, str, str, bool], list[dict]] = {}
    for c in models:
        key = (_version_number(c["protocol"]), c["protocol"], c["table"], c["quick"])
        groups.setdefault(key, []).append(c)
    for (_, proto, table, quick), rows in sorted(groups.items()):
        rows.sort(key=lambda c: -c["headline"]["mean"])
        kind = " (quick subset: not the benchmark)" if quick else ""
        lines += [f"## Language models: {proto}, {table}{kind}",
                  "", "One row per card: a model under one set of harness settings ([the settings and "
                  "metrics](llm.md)), never pooled with another row. `legal 1st`: decisions whose first "
                  "answer named a legal move; `forfeits`: decisions where every answer failed and the "
                  "lowest legal discard was played (`fallbacks`: a random move, `on_fail=random`); both are "
                  "played moves, so they are inside the margin.", "",
                  "| model | " + " | ".join(HARNESS_SHOWN) + " | margin | 95% CI | legal 1st | forfeits | "
                  "fallbacks | re-asks | tokens/decision | p50 ms | version |",
                  "|---|" + "---|" * len(HARNESS_SHOWN) + "---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for c in rows:
            u = c["llm_usage"][c["agent"]]
            h, n = u.get("harness", {}), max(u["decisions"], 1)
            rate = u.get("legal_first_try")
            model = parse_spec(c["agent"])[1].get("model", "?")
            cells = [f"`{model}`" + (" *(yours)*" if c.get("_yours") else "")]
            cells += [str(h.get(k, "?")) for k in HARNESS_SHOWN]
            cells += [_n(c["headline"]["mean"]), f"[{_n(c['headline']['lo'])}, {_n(c['headline']['hi'])}]",
                      "n/a" if rate is None else f"{100 * rate:.1f}%",
                      f"{u.get('forfeits', 0)} ({100 * u.get('forfeits', 0) / n:.1f}%)",
                      f"{u['fallbacks']} ({100 * u['fallbacks'] / n:.1f}%)", str(u["reasks"]),
                      f"{(u['tokens_in'] + u['tokens_out']) / n:.0f}", _n(u.get("latency_p50_ms"), ".0f"),
                      str(c.get("project_version") or "?")]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def complete_version(rows: list[dict], table: str) -> bool:
    """Return True if ``rows`` (one version's cards of one table and kind) hold a card of every
    baseline and shipped agent the leaderboard expects at ``table``."""
    return set(EXPECTED.get(table, ())) <= {c["agent"] for c in rows}


def _table(table: str, quick: bool, version: str, rows: list[dict], source: str,
           incomplete: bool = False) -> list[str]:
    """Return the lines of one table of the page: its rows, then its seating pairs at 3 sides
    (``incomplete``: a version whose cards are not all in, so marked)."""
    proto = f"bench-{version}"
    rows.sort(key=lambda c: -c["headline"]["mean"])
    t = protocol(proto).table(table)
    deals = t.quick_deals if quick else t.deals
    how = "each from every seat rotation" + (", each lineup in both orders of play" if t.orders == 2 else "")
    lines = [f"## {proto}, {table}{' (quick subset: not the benchmark)' if quick else ''}"
             f"{' (incomplete: not every agent has its card yet)' if incomplete else ''}", "",
             f"{deals} deals, {how}; panel: " + ", ".join(f"`{a}`" for a in t.panel) + ".", ""]
    head = ["agent", "margin", "95% CI"] + [f"vs {a}" for a in t.panel] + ["rating", "ms/move", "version"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|")
    for c in rows:
        h = c["headline"]
        vs = {o["opponent"]: o["diff"]["mean"] for o in c["opponents"]}
        cells = [f"`{c['agent']}`" + (" *(yours)*" if c.get("_yours") else ""), _n(h["mean"]),
                 f"[{_n(h['lo'])}, {_n(h['hi'])}]"]
        cells += [_n(vs[a]) if a in vs else "(self)" for a in t.panel]
        r = rating(c)
        cells.append(f"{r['mu']:.1f}" + ("" if r.get("anchored") else "*"))
        dt = c.get("decision_time") or {}
        cells.append(_n(dt.get("mean_ms"), ".2f"))
        cells.append(str(c.get("project_version") or "?"))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    pairs = seating_pairs(rows) if t.players == 3 else []
    if pairs:
        lines += ["Seating: each pair whose two cards both play it with the same third agent, "
                  "the first agent's points per round minus the second's on each card. The "
                  "cards seat the pair in the same order of play, in opposite orders, or both play "
                  "both orders ([the protocol](benchmark.md)'s seating note).", "",
                  "| pair | third | on the first's card | on the second's card | seating |",
                  "|---|---|---:|---:|---|"]
        for q in pairs:
            lines.append(f"| `{q['a']}` - `{q['b']}` | `{q['third']}` | {_n(q['on_a'])} | "
                         f"{_n(q['on_b'])} | {q['seating']} |")
        lines.append("")
    return lines


SUMMARY_FORMAT = "escoba-bench-published/1"
PUBLISHED = Path(__file__).with_name("data") / "published.json"
"""The published leaderboard's rows, shipped in the package (``escoba-bench summary`` writes it)."""


def summary(cards: list[tuple[Path, dict]]) -> dict:
    """Return the small summary of the published cards that the package ships: per card what a
    leaderboard row shows (its rating already on the panel's scale), no per-deal points."""
    rows = []
    for path, c in cards:
        rows.append({"file": Path(path).name, "protocol": c["protocol"], "table": c["table"],
                     "quick": c["quick"], "agent": c["agent"], "digest": c["deal_set"]["digest"],
                     "headline": {k: c["headline"][k] for k in ("mean", "lo", "hi")},
                     "opponents": [{"opponent": o["opponent"],
                                    "diff": {k: o["diff"][k] for k in ("mean", "lo", "hi")}}
                                   for o in c["opponents"]],
                     "rating": rating(c), "decision_time": c.get("decision_time"),
                     "project_version": c.get("project_version"),
                     **({"llm_usage": c["llm_usage"]} if is_llm_spec(c["agent"]) else {})})
    return {"format": SUMMARY_FORMAT, "cards": rows}


def load_published(path: Path = PUBLISHED) -> list[dict]:
    """Return the rows of the published leaderboard shipped in the package."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("format") != SUMMARY_FORMAT:
        raise ValueError(f"{path}: not a published leaderboard summary")
    return data["cards"]


def checkout_root() -> Path | None:
    """Return the escoba-env repository checkout this package runs from (None for an installed
    wheel: the published cards and the docs pages are not there)."""
    root = Path(__file__).resolve().parents[2]
    if (root / LEADERBOARD_DIR).is_dir() and (root / "pyproject.toml").is_file():
        return root
    return None


def write_page(directory: Path = LEADERBOARD_DIR, page: Path = PAGE) -> Path:
    """Validate every card of ``directory`` and write the page; return its path."""
    page.write_text(render(load_cards(directory)), encoding="utf-8")
    return page


def todo(directory: Path = LEADERBOARD_DIR, version: str = "v1", quick: bool = False,
         tables: tuple[str, ...] | None = None) -> list[dict]:
    """Return, for every expected card (``EXPECTED``), its path and state: ``done`` (a card file),
    ``started`` (a journal with ``blocks`` of ``total`` finished) or ``missing``; for a card not
    done, ``cpu_s_left`` estimates the CPU seconds of its missing games at the CPU time per game of
    the agent's quick card in ``directory`` (this version's, else another version's with the same
    table and panel: the same agents play the same kind of games), None without one."""
    p = protocol(version)
    rows = []
    for table in tables or tuple(t for t in EXPECTED if t in p.tables):
        t = p.table(table)
        for spec in EXPECTED[table]:
            path = default_out(spec, version, table, quick, directory)
            config = card_config(spec, version, table, quick=quick)
            tasks = make_tasks(config)
            row = {"table": table, "agent": spec, "path": path, "total": len(tasks), "blocks": 0}
            jpath = journal_path(path.with_suffix(""))
            have: set[tuple[int, int]] = set()
            if path.is_file():
                row["state"] = "done"
                row["blocks"] = row["total"]
            elif jpath.is_file():
                row["state"] = "started"
                have = {(b.lineup, b.block) for b in Journal(jpath, run_key(config, record=False)).load()}
                row["blocks"] = len(have)
            else:
                row["state"] = "missing"
            left = sum(k.hi - k.lo for k in tasks if (k.lineup, k.block) not in have) * t.rules().num_sides
            sources = [v for v, q in PROTOCOLS.items()
                       if table in q.tables and q.tables[table].panel == t.panel]
            sources.sort(key=lambda v: v != p.version)  # this version's quick card first
            row["cpu_s_left"] = None if row["state"] == "done" else next(
                (r for r in (_cpu_per_game(default_out(spec, v, table, True, directory),
                                           card_config(spec, v, table, quick=True)) for v in sources)
                 if r is not None), None)
            if row["cpu_s_left"] is not None:
                row["cpu_s_left"] *= left
            rows.append(row)
    return rows


def _cpu_per_game(quick_card: Path, quick_config) -> float | None:
    """Return the CPU seconds per game of ``quick_card`` (None without it); only the blocks its
    timed sitting played count (``timing.blocks_resumed``)."""
    if not quick_card.is_file():
        return None
    timing = json.loads(quick_card.read_text(encoding="utf-8")).get("timing", {})
    tasks = make_tasks(quick_config)
    blocks = timing.get("blocks", len(tasks))
    timed = blocks - timing.get("blocks_resumed", 0)
    games = sum(k.hi - k.lo for k in tasks) * quick_config.rules.num_sides * timed / max(blocks, 1)
    cpu = timing.get("cpu_s")
    return None if not cpu or games <= 0 else cpu / games
