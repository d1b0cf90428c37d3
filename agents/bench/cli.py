"""``escoba-bench``: report cards on the frozen deal sets, the panels' reference ratings, the deal-set
digests and the leaderboard page (``docs/benchmark.md``)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path

from escoba_env.faces.cli import DefaultsFormatter, OneLineParser

from ..spec.registry import names, read_specs
from ..tournament.signals import run_program
from . import card, exploit, leaderboard
from .leaderboard import LEADERBOARD_DIR, PAGE, PUBLISHED
from .protocol import PROTOCOLS, TABLES, deal_set_digest, pinned_digest, protocol

PROG = "escoba-bench"
EPILOG = """examples:
  escoba-bench card expert --table 2p --quick      # a development card (500 deals), not the benchmark
  escoba-bench card neural-solo --table 2p --out results/neural-solo-card.json
  escoba-bench list                                # the protocols' tables, panels and agents
  escoba-bench digest                              # today's engine's deal sets against the pinned digests
  escoba-bench bound expert --dir results          # every best response's bound, the best one corrected
  escoba-bench leaderboard --dir mycards --page mine.md   # your cards beside the published ones
in a checkout of the escoba-env repository (its own leaderboard):
  escoba-bench leaderboard                         # regenerate docs/leaderboard.md from the cards
  escoba-bench todo                                # which full cards the leaderboard still lacks
  escoba-bench todo --run --workers 16             # play them all, resuming any unfinished one
  escoba-bench summary                             # the published cards' summary the package ships
"""


class _Parser(OneLineParser):
    """The project's one-line parser (``escoba_env.faces.cli.OneLineParser``), its errors named
    ``escoba-bench`` whatever the sub-command."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print the error as one line and exit with status 2."""
        self.exit(2, f"{PROG}: error: {message} (see --help)\n")


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of escoba-bench."""
    p = _Parser(prog=PROG, description="The escoba-env benchmark protocol: report cards on frozen deal sets.",
                epilog=EPILOG, formatter_class=DefaultsFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_play_commands(sub)
    _add_page_commands(sub)
    return p


_VERSIONS = ", ".join(f"v{k[1:]}" for k in PROTOCOLS)


def _add_common(q: argparse.ArgumentParser, out_help: str) -> None:
    """Add the options of every command that plays a deal set (card, panel, exploit) to ``q``."""
    q.add_argument("--version", default="v1", help=f"protocol version ({_VERSIONS})")
    q.add_argument("--table", default="2p", choices=TABLES, help="table size")
    q.add_argument("--quick", action="store_true",
                   help="the set's first deals only (500): for development, labelled not the benchmark")
    q.add_argument("--out", metavar="PATH", help=out_help)
    q.add_argument("--resume", action="store_true",
                   help="finish the interrupted run of the same card from its journal (PATH.journal.jsonl)")
    q.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    q.add_argument("--workers", type=_positive, default=min(2, os.cpu_count() or 1), metavar="N",
                   help="processes; the numbers do not depend on it")
    q.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def _add_play_commands(sub: argparse._SubParsersAction) -> None:
    """Add the commands that play: card, panel and exploit."""
    c = sub.add_parser("card", help="play an agent against the panel and write its report card",
                       formatter_class=DefaultsFormatter)
    c.add_argument("agent", metavar="SPEC", help="agent spec (escoba-evaluate --help lists the names)")
    _add_common(c, "card file (default: results/bench-<version>-<table>-<spec>[-quick].json)")
    c.add_argument("--timing-deals", type=int, default=8, metavar="N",
                   help="deals played one game at a time to time the agent's decisions (0: skip)")
    pn = sub.add_parser("panel", help="play the panel's round robin: the reference of the rating scale",
                        formatter_class=DefaultsFormatter)
    _add_common(pn, "reference file (default: the package's "
                    "agents/bench/data/bench-<version>-<table>-panel[-quick].json)")
    pn.add_argument("--from-cards", metavar="DIR",
                    help="fit the reference from the panel members' card files in DIR instead of playing")
    ex = sub.add_parser("exploit", help="train a best response to a frozen agent: a lower bound on its "
                        "exploitability", formatter_class=DefaultsFormatter)
    ex.add_argument("agent", metavar="SPEC", help="the frozen agent to respond to")
    _add_common(ex, "result file (default: results/exploit-<version>-<table>-<spec>[-quick].json, and .png)")
    ex.add_argument("--steps", type=_positive, required=True, metavar="N",
                    help="training steps of the learner")
    ex.add_argument("--seed", type=int, default=1, help="seed of the learner's training")
    ex.add_argument("--also", nargs="+", default=(), metavar="SPEC",
                    help="also play the trained response against these agents (e.g. a slow search agent "
                         "the response was trained against a fast stand-in of)")
    ex.add_argument("--init", metavar="NET",
                    help="start the learner from a shipped PPO network's weights (neural-2p-plain, "
                         "neural-2p, neural-2v2, neural-3p) or checkpoint:PATH instead of a fresh network")
    ex.add_argument("--lr", type=float, metavar="LR",
                    help="the learner's learning rate (default: the trainer's, 1e-3; a started network "
                         "keeps more of its strength with a smaller one)")
    ex.add_argument("--runs-dir", default="runs", help="folder of the training run")
    ex.add_argument("--num-envs", type=_positive, default=2048, metavar="N", help="games per update")
    ex.add_argument("--evals", type=_positive, default=10, metavar="N",
                    help="points of the learning curve (evaluations along the run)")
    ex.add_argument("--eval-deals", type=_positive, default=200, metavar="N",
                    help="duplicate deals of each evaluation along the run")


def _add_page_commands(sub: argparse._SubParsersAction) -> None:
    """Add the commands that read or write results and pages: bound, digest, list, leaderboard, summary,
    todo."""
    bd = sub.add_parser("bound", help="every best response's bound against an agent, and the best one "
                        "corrected for the choice (Bonferroni over the runs)",
                        formatter_class=DefaultsFormatter)
    bd.add_argument("agent", metavar="SPEC", help="the frozen agent the responses were trained against")
    bd.add_argument("--table", default="2p", choices=TABLES, help="table size")
    bd.add_argument("--dir", default=None, help="folder of exploit results (default: the repository's "
                                                "benchmarks/exploit in a checkout, else results)")
    d = sub.add_parser("digest", help="deal the sets with this engine and check them against the pinned "
                       "digests", formatter_class=DefaultsFormatter)
    d.add_argument("--version", default="v1", help=f"protocol version ({_VERSIONS})")
    sub.add_parser("list", help="list the protocols' tables, panels and the agents a card can be made for",
                   formatter_class=DefaultsFormatter)
    lb = sub.add_parser("leaderboard", help="validate the card files and write the leaderboard page; "
                        "cards of your own are shown beside the published ones",
                        formatter_class=DefaultsFormatter)
    lb.add_argument("--dir", default=None,
                    help="folder of card files (default: the repository's benchmarks/leaderboard in a "
                         "checkout; elsewhere, none: the published cards only)")
    lb.add_argument("--page", default=None,
                    help="page to write (default: the repository's docs/leaderboard.md in a checkout, "
                         "elsewhere the terminal); '-' prints it")
    lb.add_argument("--no-published", dest="published", action="store_false",
                    help="only the cards of --dir, not beside the published leaderboard")
    lb.add_argument("--check", action="store_true",
                    help="write nothing: fail if the page is not what the card files give")
    sm = sub.add_parser("summary", help="write the summary of the repository's published cards that "
                        "the package ships (a checkout only)", formatter_class=DefaultsFormatter)
    sm.add_argument("--check", action="store_true", help="write nothing: fail if the summary is stale")
    td = sub.add_parser("todo", help="the repository's own leaderboard (a checkout of escoba-env): list "
                        "the cards of every baseline and shipped agent it lacks; with --run, play them",
                        formatter_class=DefaultsFormatter)
    td.add_argument("--version", default="v1", help=f"protocol version ({_VERSIONS})")
    td.add_argument("--table", nargs="+", choices=TABLES, default=None,
                    help="tables (default: the version's)")
    td.add_argument("--quick", action="store_true", help="the --quick cards instead of the full ones")
    td.add_argument("--dir", default=None, help="folder of card files (default: the checkout's "
                                                "benchmarks/leaderboard)")
    td.add_argument("--page", default=None, help="page rewritten once the cards are played (--run; "
                                                 "default: the checkout's docs/leaderboard.md)")
    td.add_argument("--run", action="store_true",
                    help="play every card not done, in the listed order, resuming unfinished ones")
    td.add_argument("--workers", type=_positive, default=min(2, os.cpu_count() or 1), metavar="N",
                    help="processes of each card; the numbers do not depend on it")
    td.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def main(argv: list[str] | None = None) -> int:
    """Run escoba-bench with ``argv``; return the exit status (one line on any error or signal)."""
    return run_program(PROG, _main, argv)


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command not in ("digest", "list", "bound", "leaderboard", "summary"):
        protocol(args.version)  # an unknown version fails before anything runs
    return _COMMANDS[args.command](args)


def _digest(args: argparse.Namespace) -> int:
    """Deal every table's sets with this engine; print each digest against the pinned one."""
    p = protocol(args.version)
    bad = []
    for name, t in p.tables.items():
        for quick, n in ((False, t.deals), (True, t.quick_deals)):
            got, want = deal_set_digest(p.version, name, n), pinned_digest(p.version, name, quick)
            state = ("not pinned" if want is None else "matches the pinned digest" if got == want
                     else f"DIFFERS from the pinned {want}")
            print(f"bench-{p.version} {name}{' quick' if quick else ''}: seed {p.seed(name)}, "
                  f"{n} deals, today's engine {got} ({state})")
            if want is not None and got != want:
                bad.append(f"{name}{' quick' if quick else ''}")
    if bad:
        raise ValueError(f"this engine deals bench-{p.version} {', '.join(bad)} otherwise than the "
                         "protocol pins: it cannot play those cards")
    return 0


def _panel(args: argparse.Namespace) -> int:
    """Play the panel's round robin (or fit it from the members' cards); write its reference."""
    if args.from_cards:
        data = card.panel_from_cards([c for _, c in leaderboard.load_cards(Path(args.from_cards))],
                                     args.version, args.table, args.quick)
        path = Path(args.out) if args.out else card.panel_reference_path(args.version, args.table, args.quick)
        if path.exists() and not args.overwrite:
            raise ValueError(f"{path} already exists: pass --overwrite to replace it")
        card.write_atomic(path, data)
    else:
        data, path = card.run_panel(version=args.version, table=args.table, quick=args.quick, out=args.out,
                                    resume=args.resume, overwrite=args.overwrite, workers=args.workers,
                                    progress=args.progress)
    for r in data["ratings"]:
        print(f"{r['agent']:<16} mu {r['mu']:6.2f}  sigma {r['sigma']:.2f}")
    print(f"wrote {path}")
    return 0


def _exploit(args: argparse.Namespace) -> int:
    """Train a best response to a frozen agent; print its bound."""
    data, path = exploit.run_exploit(args.agent, steps=args.steps, version=args.version, table=args.table,
                                     seed=args.seed, also=tuple(args.also), quick=args.quick, out=args.out,
                                     runs_dir=args.runs_dir, resume=args.resume, overwrite=args.overwrite,
                                     workers=args.workers, num_envs=args.num_envs, evals=args.evals,
                                     eval_deals=args.eval_deals, progress=args.progress, init=args.init,
                                     lr=args.lr)
    print(data["statement"])
    for k, v in data["also"].items():
        d = v["diff"]
        print(f"  against {k}: {d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}] points per round")
    print(f"wrote {path} and {path.with_suffix('.png')}")
    return 0


def _card(args: argparse.Namespace) -> int:
    """Play an agent's report card; print its headline."""
    if args.timing_deals < 0:
        raise ValueError(f"--timing-deals must be 0 or more, got {args.timing_deals}")
    spec = read_specs([args.agent], PROG)[0]  # read here, once
    data, path = card.run_card(spec, version=args.version, table=args.table, quick=args.quick,
                               out=args.out, resume=args.resume, overwrite=args.overwrite,
                               workers=args.workers, progress=args.progress, timing_deals=args.timing_deals)
    print(card.headline_text(data))
    print(f"\nwall {data['timing']['wall_s']:.1f} s; wrote {path}")
    return 0


def _list(args: argparse.Namespace) -> int:
    """Print every protocol version's tables and panels, and the agents a card can be made for."""
    for v, p in PROTOCOLS.items():
        print(f"bench-{v}")
        for name, t in p.tables.items():
            orders = ", both orders of play" if t.orders == 2 else ""
            print(f"  {name:<4} {t.players} players{' in partnerships' if t.partnerships else ''}, "
                  f"{t.deals} deals (--quick: {t.quick_deals}), every seat rotation{orders}, "
                  f"blocks of {t.block_deals}")
            print(f"       panel: {', '.join(t.panel)}")
            if t.digests:
                print(f"       digests: {t.digests[0]} (--quick {t.digests[1]})")
    print("agents on the published leaderboard:")
    for table, agents in leaderboard.EXPECTED.items():
        print(f"  {table:<4} {', '.join(agents)}")
    print("a card can be made for any agent spec: " + ", ".join(names())
          + " (escoba-evaluate --help); your own: python:MODULE:FACTORY, checkpoint:PATH, sb3:PATH")
    return 0


def _bound(args: argparse.Namespace) -> int:
    """Print every best response's bound against an agent, then the corrected best of them."""
    root = leaderboard.checkout_root()
    folder = Path(args.dir) if args.dir else (root / "benchmarks" / "exploit" if root else Path("results"))
    results = []
    for path in sorted(folder.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(d, dict) and d.get("format") == exploit.EXPLOIT_FORMAT and d["agent"] == args.agent \
                and d["table"] == args.table:
            results.append(d)
    if not results:
        raise ValueError(f"no best response to {args.agent} at {args.table} in {folder}")
    bound = exploit.best_bound(results)
    for (_, _, _, init, lr, seed, steps, _), b in bound["each"]:
        start = f"from {init}, lr {lr:g}" if init else "fresh"
        print(f"{steps:>12,} steps, {start:<34} seed {seed}: {b['mean']:+.3f} "
              f"[{b['lo']:+.3f}, {b['hi']:+.3f}]")
    print(exploit.best_statement(bound))
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    """Write (or check) the leaderboard page of a folder of cards, beside the published rows unless
    the folder is the repository's own leaderboard."""
    root = leaderboard.checkout_root()
    own = root / LEADERBOARD_DIR if root else None
    folder = Path(args.dir) if args.dir else own
    mine = folder is not None and own is not None and folder.resolve() == own.resolve()
    page = args.page or (str(root / PAGE) if root and mine else "-")
    cards = leaderboard.load_cards(folder) if folder is not None else []
    source = str(LEADERBOARD_DIR if mine else (args.dir or "(none)")).rstrip("/")
    published = None if mine or not args.published else leaderboard.load_published()
    text = leaderboard.render(cards, source, published)
    if args.check:
        if page == "-" or not Path(page).is_file() or Path(page).read_text(encoding="utf-8") != text:
            raise ValueError(f"{page} is not what {source} gives: run escoba-bench leaderboard")
        print(f"ok: {page} matches {source}")
        return 0
    if page == "-":
        print(text)
        return 0
    Path(page).write_text(text, encoding="utf-8")
    print(f"wrote {page}")
    return 0


def _summary(args: argparse.Namespace) -> int:
    """Write (or check) the package's summary of the repository's published cards."""
    root = leaderboard.checkout_root()
    if root is None:
        raise ValueError("summary writes the package's copy of the repository's published cards: run it "
                         "in a checkout of escoba-env")
    data = leaderboard.summary(leaderboard.load_cards(root / LEADERBOARD_DIR))
    if args.check:
        if not PUBLISHED.is_file() or json.loads(PUBLISHED.read_text(encoding="utf-8")) != data:
            raise ValueError(f"{PUBLISHED} is not what {LEADERBOARD_DIR} gives: run escoba-bench summary")
        print(f"ok: {PUBLISHED} matches {LEADERBOARD_DIR}")
        return 0
    card.write_atomic(PUBLISHED, data)
    print(f"wrote {PUBLISHED} ({len(data['cards'])} cards)")
    return 0


def _todo(args: argparse.Namespace) -> int:
    """List the expected cards and their state; with ``--run``, play the ones not done."""
    root = leaderboard.checkout_root()
    if args.dir is None and root is None:
        raise ValueError("todo is for escoba-env's own leaderboard (benchmarks/leaderboard in a checkout "
                         "of the repository), and this is not one: play your agent's card with "
                         "escoba-bench card, and compare it with escoba-bench leaderboard --dir DIR")
    args.dir = args.dir or str(root / LEADERBOARD_DIR)
    args.page = args.page or str((root or Path.cwd()) / PAGE)
    tables = tuple(args.table) if args.table else None
    rows = leaderboard.todo(Path(args.dir), args.version, args.quick, tables)
    kind = "quick" if args.quick else "full"
    for r in rows:
        state = {"done": "done", "missing": "missing",
                 "started": f"started: {r['blocks']} of {r['total']} blocks in its journal"}[r["state"]]
        if r.get("cpu_s_left") is not None:
            state += f" (about {r['cpu_s_left'] / 3600:.1f} CPU-hours left)"
        print(f"{r['table']:<4} {r['agent']:<16} {state}")
    left = [r for r in rows if r["state"] != "done"]
    print(f"{len(rows) - len(left)} of {len(rows)} {kind} cards done in {args.dir}")
    known = [r["cpu_s_left"] for r in left if r.get("cpu_s_left") is not None]
    if known:
        unknown = len(left) - len(known)
        print(f"about {sum(known) / 3600:.1f} CPU-hours left at the CPU time per game of their quick cards"
              + (f" ({unknown} without a quick card not counted)" if unknown else "")
              + "; --workers N divides the wall time")
    if not args.run:
        for r in left[:1]:
            flags = (" --quick" if args.quick else "") + (" --resume" if r["state"] == "started" else "")
            version = "" if args.version == "v1" else f" --version {args.version}"
            print(f"next: escoba-bench card {r['agent']}{version} --table {r['table']} --out {r['path']}"
                  f"{flags}  (or: escoba-bench todo{version} --run)")
        return 0
    page = Path(args.page)
    own = root is not None and Path(args.dir).resolve() == (root / LEADERBOARD_DIR).resolve()
    played = 0
    try:
        for r in left:
            print(f"\n== {r['table']} {r['agent']} ({kind} card)", flush=True)
            data, path = card.run_card(r["agent"], version=args.version, table=r["table"], quick=args.quick,
                                       out=r["path"], resume=r["state"] == "started", workers=args.workers,
                                       progress=args.progress)
            played += 1
            print(card.headline_text(data))
            print(f"wall {data['timing']['wall_s']:.1f} s; wrote {path}", flush=True)
    finally:
        # the page is rewritten once, when the cards are played (or the run stops): rewritten between
        # cards, a tracked page would make every later card's tree modified ("dirty") in its provenance
        if played:
            page.write_text(leaderboard.render(leaderboard.load_cards(Path(args.dir)),
                                               str(LEADERBOARD_DIR) if own else args.dir), encoding="utf-8")
            print(f"wrote {page}", flush=True)
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "digest": _digest, "list": _list, "bound": _bound, "leaderboard": _leaderboard, "summary": _summary,
    "todo": _todo, "panel": _panel, "exploit": _exploit, "card": _card}
"""Sub-command -> the function that runs it."""


if __name__ == "__main__":
    raise SystemExit(main())
