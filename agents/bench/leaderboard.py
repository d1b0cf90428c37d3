"""The leaderboard page: ``docs/leaderboard.md`` generated from the card files kept in the repository.

Every ``benchmarks/leaderboard/*.json`` is a report card (``escoba-bench card``). A file is valid
when it has the card format, a known protocol version and table, and a deal-set digest equal to the
one the protocol's deals give today. The page lists, per table, every card sorted by its headline
margin (best first), full-set cards and ``--quick`` cards in separate tables.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..registry import REGISTRY
from .card import CARD_FORMAT
from .protocol import deal_set_digest, protocol

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
    if ds.get("seed") != p.seed(card["table"]):
        raise ValueError(f"{name}: deal seed {ds.get('seed')} is not the protocol's")
    if ds.get("digest") != deal_set_digest(card["protocol"], card["table"], want):
        raise ValueError(f"{name}: deal-set digest differs from the protocol's deals")
    h = card["headline"]
    for k in ("mean", "lo", "hi"):
        if not isinstance(h.get(k), (int, float)):
            raise ValueError(f"{name}: headline {k} is not a number")
    panel = [a for a in t.panel if a != card["agent"]]
    if sorted(o["opponent"] for o in card["opponents"]) != sorted(panel):
        raise ValueError(f"{name}: opponents are not the protocol's panel {panel}")


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
    (fitted again from the card's per-deal points), else the card's own rating."""
    from .card import anchored_rating, load_reference

    ref = load_reference(card["protocol"], card["table"], card["quick"])
    if ref is None or card["rating"].get("anchored"):
        return card["rating"]
    return anchored_rating(card["per_deal"], card["agent"], ref)


def seating_pairs(rows: list[dict]) -> list[dict]:
    """Return, for a 3-side table's cards, every pair of carded agents and third agent that both
    pair members' cards play: the pair's points-per-round difference on each card and whether the
    two cards seat them in the same order of play.

    A card's stored lineups list their agents in seat order (the tournament's lineups are increasing
    entrant indices, and its rotations keep the order of play), so the agent that plays right after
    ``a`` in a lineup is the next one in the list, cyclically.
    """
    by_agent = {c["agent"]: c["per_deal"] for c in rows}
    out = []

    def diff(pd, a, b, c):
        for lu, x in zip(pd["lineups"], pd["points_per_round"], strict=True):
            if len(lu) == 3 and set(lu) == {a, b, c}:
                col = [row[lu.index(a)] - row[lu.index(b)] for row in x]
                return lu[(lu.index(a) + 1) % 3], sum(col) / len(col)
        return None

    names = [c["agent"] for c in rows]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            thirds = sorted({x for lu in by_agent[a]["lineups"] if b in lu for x in lu} - {a, b})
            for c in thirds:
                da, db = diff(by_agent[a], a, b, c), diff(by_agent[b], a, b, c)
                if da is None or db is None:
                    continue
                out.append({"a": a, "b": b, "third": c, "on_a": da[1], "on_b": db[1],
                            "same_seating": da[0] == db[0]})
    return out


def render(cards: list[tuple[Path, dict]]) -> str:
    """Return the leaderboard page (Markdown) for the given cards."""
    lines = ["# Leaderboard", "",
             "<!-- generated by `escoba-bench leaderboard` from benchmarks/leaderboard/*.json: "
             "do not edit by hand -->", "",
             "Report cards of the benchmark protocol ([the protocol](benchmark.md)), one row per card "
             "file in `benchmarks/leaderboard/`, sorted by the headline **margin** (points per round "
             "over the mean of the other sides at the table, averaged over the panel; 95% interval "
             "paired over deals). Rows marked *quick* played the protocol's `--quick` subset: they "
             "are for development and are not benchmark results.", ""]
    if not cards:
        lines += ["No cards yet.", ""]
    by_table: dict[tuple[str, str, bool], list[dict]] = {}
    for _, c in cards:
        by_table.setdefault((c["protocol"], c["table"], c["quick"]), []).append(c)
    for (proto, table, quick), rows in sorted(by_table.items()):
        rows.sort(key=lambda c: -c["headline"]["mean"])
        t = protocol(proto).table(table)
        deals = t.quick_deals if quick else t.deals
        lines += [f"## {proto}, {table}{' (quick subset: not the benchmark)' if quick else ''}", "",
                  f"{deals} deals, each from every seat rotation; panel: "
                  + ", ".join(f"`{a}`" for a in t.panel) + ".", ""]
        head = ["agent", "margin", "95% CI"] + [f"vs {a}" for a in t.panel] + ["rating", "ms/move", "version"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|")
        for c in rows:
            h = c["headline"]
            vs = {o["opponent"]: o["diff"]["mean"] for o in c["opponents"]}
            cells = [f"`{c['agent']}`", _n(h["mean"]), f"[{_n(h['lo'])}, {_n(h['hi'])}]"]
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
                      "cards seat the pair in the same order of play or in opposite orders "
                      "([the protocol](benchmark.md)'s seating note).", "",
                      "| pair | third | on the first's card | on the second's card | seating |",
                      "|---|---|---:|---:|---|"]
            for q in pairs:
                lines.append(f"| `{q['a']}` - `{q['b']}` | `{q['third']}` | {_n(q['on_a'])} | "
                             f"{_n(q['on_b'])} | {'same' if q['same_seating'] else 'opposite'} |")
            lines.append("")
    described = sorted({c["agent"] for _, c in cards if c["agent"] in REGISTRY})
    if described:  # each agent's one-line description, as the registry declares it
        lines += ["The agents:", "", *(f"- `{a}`: {REGISTRY[a].help}" for a in described), ""]
    lines += ["`vs X`: the agent's points per round minus X's, paired over deals (at 3 players for the "
              "card's one seating order only, so a pair's two cards can disagree: [the protocol]"
              "(benchmark.md)'s seating note). `rating`: OpenSkill "
              "mu on the panel's scale (`*`: not anchored, the panel's reference ratings were missing). "
              "`ms/move`: mean decision time, one game at a time, on the machine in the card file.", ""]
    return "\n".join(lines)


def write_page(directory: Path = LEADERBOARD_DIR, page: Path = PAGE) -> Path:
    """Validate every card of ``directory`` and write the page; return its path."""
    page.write_text(render(load_cards(directory)), encoding="utf-8")
    return page


def todo(directory: Path = LEADERBOARD_DIR, version: str = "v1", quick: bool = False,
         tables: tuple[str, ...] | None = None) -> list[dict]:
    """Return, for every expected card (``EXPECTED``), its path and state: ``done`` (a card file),
    ``started`` (a journal with ``blocks`` of ``total`` finished) or ``missing``; for a full card not
    done, ``cpu_s_left`` estimates the CPU seconds its missing blocks take, from the CPU time per
    block of the agent's quick card in ``directory`` (None without one)."""
    from ..tournament.journal import Journal, journal_path, run_key
    from ..tournament.runner import make_tasks
    from .card import card_config, default_out

    p = protocol(version)
    rows = []
    for table in tables or tuple(EXPECTED):
        p.table(table)
        for spec in EXPECTED[table]:
            path = default_out(spec, version, table, quick, directory)
            config = card_config(spec, version, table, quick=quick)
            row = {"table": table, "agent": spec, "path": path, "total": len(make_tasks(config)), "blocks": 0}
            jpath = journal_path(path.with_suffix(""))
            if path.is_file():
                row["state"] = "done"
                row["blocks"] = row["total"]
            elif jpath.is_file():
                row["state"] = "started"
                row["blocks"] = len(Journal(jpath, run_key(config, record=False)).load())
            else:
                row["state"] = "missing"
            row["cpu_s_left"] = None if quick or row["state"] == "done" else _cpu_left(
                default_out(spec, version, table, True, directory),
                card_config(spec, version, table, quick=True), row["total"] - row["blocks"])
            rows.append(row)
    return rows


def _cpu_left(quick_card: Path, quick_config, blocks: int) -> float | None:
    """Return the CPU seconds of ``blocks`` blocks at the rate of ``quick_card`` (None without it);
    the rate counts only the blocks its timed sitting played (``timing.blocks_resumed``)."""
    from ..tournament.runner import make_tasks

    if not quick_card.is_file():
        return None
    timing = json.loads(quick_card.read_text(encoding="utf-8")).get("timing", {})
    timed = timing.get("blocks", len(make_tasks(quick_config))) - timing.get("blocks_resumed", 0)
    cpu = timing.get("cpu_s")
    return None if not cpu or timed <= 0 else cpu / timed * blocks
