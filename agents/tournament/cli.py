"""The command line of ``evaluate.py``: parse, run the tournament, print the table, write the files.

Bad input (an unknown agent, a missing, corrupt or incompatible checkpoint, options that do not
fit together, a zero or negative count) ends with one line on stderr and a non-zero exit status:
2 for a bad command line, 1 for anything that fails later. Never a traceback.

Nothing is lost or clobbered: every finished block of deals is appended (fsynced) to a journal
next to the results as it arrives, so a run stopped by Ctrl-C or SIGTERM (exit 130 / 143) or by a
dead worker (exit 1) keeps its finished blocks and ``--resume`` finishes it with the numbers of an
uninterrupted run. Existing result files, replays or journals are refused (before anything is
written) unless ``--overwrite`` is given.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from escoba_env.faces.cli import (
    DefaultsFormatter,
    OneLineParser,
    add_rules_arguments,
    rules_from_args,
    seed_arg,
)
from escoba_env.faces.cli import positive_int as _positive

from ..spec.registry import help_text, read_specs
from . import analysis, raycluster, report, runner
from .journal import Journal, journal_path, new_sitting, provenance, run_key
from .replay import ReplayWriter, check_replays, replay_paths
from .runner import TournamentConfig
from .signals import SIGNALS, run_program

DEFAULT_AGENTS = ("random", "greedy", "expert", "search")
DEFAULT_DEALS = 300
def prog() -> str:
    """Return the name the program's usage and errors go by: the console script's, or the file's."""
    return "escoba-evaluate" if os.path.basename(sys.argv[0]) == "escoba-evaluate" else "evaluate.py"

EPILOG = """\
examples (escoba-evaluate, python -m agents.tournament and python evaluate.py are the same program):
  escoba-evaluate                                      # short default tournament of the built-in agents
  escoba-evaluate --agents random greedy expert --rounds 2000
  escoba-evaluate --vs neural-2p --agents greedy expert --rounds 500 --workers 2
  escoba-evaluate --agents greedy expert --players 4 --partnerships --games 200
  escoba-evaluate --agents greedy expert --save-replays replays/ --rounds 10
  escoba-evaluate --check-replays replays/

--rounds N plays N deals per lineup as single rounds, --games N as whole games to the target score;
with duplicate deals (the default) every deal is played once per seat rotation, so a 2-player
pair plays 2N rounds (or games).
"""


def _confidence(text: str) -> float:
    """Return ``text`` as a confidence level in (0, 1) (an argparse type)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}") from None
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of evaluate.py."""
    p = OneLineParser(prog=prog(), description="Benchmark Escoba agents against each other: duplicate deals, "
                      "confidence intervals, ratings.", formatter_class=DefaultsFormatter,
                      epilog=f"{EPILOG}\nagents:\n{help_text()}\n")
    who = p.add_argument_group("agents")
    who.add_argument("--agents", nargs="+", metavar="SPEC",
                     help=f"agent specs, name[:key=value,...] (the agents are listed below). A round robin, "
                          f"or the opponents of --vs (default: {' '.join(DEFAULT_AGENTS)})")
    who.add_argument("--vs", metavar="SPEC",
                     help="play this agent against each of --agents instead of a round robin")
    add_rules_arguments(p.add_argument_group("rules (defaults: escoba_env.Rules)"),
                        partnerships_help="4 players in two teams of 2 (seats 0+2, 1+3); an agent plays "
                                          "both seats of its team",
                        target_help="points that win a game (with --games)")
    size = p.add_argument_group("what to play")
    how = size.add_mutually_exclusive_group()
    how.add_argument("--rounds", type=_positive, metavar="N",
                     help=f"N deals per lineup, each a single round (default: {DEFAULT_DEALS})")
    how.add_argument("--games", type=_positive, metavar="N",
                     help="N deals per lineup, each a whole game to the target score")
    size.add_argument("--no-duplicate", dest="duplicate", action="store_false",
                      help="play each deal once (seats still alternate) instead of once per seat rotation")
    size.add_argument("--max-rounds", type=_positive, default=100, metavar="N",
                      help="with --games: a game undecided after N rounds is cut and counts as a draw")
    size.add_argument("--seed", type=seed_arg, default=0, help="seed of the deals and the agents")
    size.add_argument("--confidence", type=_confidence, default=0.95, help="level of the intervals")
    run = p.add_argument_group("running")
    run.add_argument("--workers", type=_positive, default=min(2, os.cpu_count() or 1), metavar="N",
                     help="processes (or Ray CPUs; default: min(2, CPUs)); the numbers do not depend on it")
    run.add_argument("--backend", choices=("local", "ray"), default="local",
                     help="local processes, or Ray (pip install 'escoba-env[ray]')")
    run.add_argument("--ray-address", metavar="ADDR", help="Ray cluster to join (default: start a local one)")
    run.add_argument("--block-deals", type=_positive, default=100, metavar="N",
                     help="deals per task (part of the config: agents are re-seeded per block)")
    run.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    out = p.add_argument_group("output")
    out.add_argument("--out", default="results/evaluation", metavar="PREFIX",
                     help="write PREFIX.json, PREFIX_pairs.csv, PREFIX_ratings.csv, PREFIX.png "
                          "(default: results/evaluation; a directory: DIR/evaluation.*)")
    out.add_argument("--no-plot", dest="plot", action="store_false", help="do not write the PNG plot")
    out.add_argument("--save-replays", metavar="DIR",
                     help="write every game as JSON lines to DIR/<lineup>.jsonl")
    out.add_argument("--overwrite", action="store_true",
                     help="replace result files, replays or an unfinished run's journal that already exist "
                          "(without it the run refuses before writing anything)")
    out.add_argument("--resume", action="store_true",
                     help="continue the interrupted run of the same options from its journal "
                          "(PREFIX.journal.jsonl): only the missing blocks are played, same numbers")
    out.add_argument("--check-replays", metavar="PATH",
                     help="only re-play a replay file (or a directory of them) through the engine and "
                          "verify it")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run evaluate.py with ``argv``; return the exit status."""
    return run_program(prog(), _main, argv)


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.check_replays:
        t0 = time.perf_counter()
        games, actions = check_replays(args.check_replays)
        print(f"ok: {games} games, {actions} actions re-played and verified by the engine "
              f"({time.perf_counter() - t0:.1f} s)")
        return 0
    rules = rules_from_args(args)
    # each spec is read here, once: the config, its tasks and the workers take the values read
    agents = read_specs(args.agents or DEFAULT_AGENTS, prog())
    vs = read_specs([args.vs], prog())[0] if args.vs is not None else None
    config = TournamentConfig(agents=agents, vs=vs, rules=rules,
                              deals=args.games or args.rounds or DEFAULT_DEALS, games=args.games is not None,
                              duplicate=args.duplicate, seed=args.seed, max_rounds=args.max_rounds,
                              block_deals=args.block_deals, confidence=args.confidence, workers=args.workers,
                              backend=args.backend, ray_address=args.ray_address)
    return run_and_report(config, out=args.out, plot=args.plot, progress=args.progress,
                          replays=args.save_replays, resume=args.resume, overwrite=args.overwrite)


def result_prefix(out: str) -> Path:
    """Return the prefix of the result files that ``--out`` names (a directory: DIR/evaluation)."""
    prefix = Path(out)
    if out.endswith(("/", "\\")) or prefix.is_dir():
        prefix = prefix / "evaluation"
    return prefix


def run_and_report(config: TournamentConfig, *, out: str, plot: bool = True, progress: bool = False,
                   replays: str | None = None, resume: bool = False, overwrite: bool = False) -> int:
    """Run ``config``, print the table and write the result files under the ``out`` prefix.

    Everything is checked before anything is written: the agents, and that no result file, replay
    file or journal already exists (unless ``overwrite``; with ``resume`` the journal and the
    replays are the interrupted run's own and are continued).
    """
    prefix = result_prefix(out)
    cheating = runner.prepare_agents(config)  # a bad spec or checkpoint fails here, before a file is touched
    if config.backend == "ray" and config.ray_address:  # so does a cluster that is not there
        raycluster.check_reachable(config.ray_address)
    outputs = [prefix.with_name(prefix.name + s) for s in (".json", "_pairs.csv", "_ratings.csv")]
    if plot:
        outputs.append(prefix.with_name(prefix.name + ".png"))
    specs = [tuple(config.entrants[i] for i in lu) for lu in runner.lineups(config)]
    jpath = journal_path(prefix)
    journal = Journal(jpath, run_key(config, record=replays is not None))
    finished = journal.load() if resume else []
    if not overwrite:
        taken = [p for p in outputs if p.exists()]
        if not resume:
            taken += [p for p in (jpath, *(replay_paths(replays, specs) if replays else [])) if p.exists()]
        if taken:
            hint = "" if resume or not jpath.exists() else " or --resume to continue that unfinished run"
            raise ValueError(f"{taken[0]} already exists: pass --overwrite to replace it{hint}, "
                             "or choose another --out / --save-replays")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    total = len(runner.make_tasks(config))
    kept = len(finished)
    source = report.git_state()  # the source this process loaded, before hours of play
    sitting = new_sitting(source, kept)
    journal.start(resume, sitting)
    writer = None
    if replays:
        writer = ReplayWriter(replays, specs, seed=config.seed, rules=config.rules, games=config.games,
                              max_rounds=config.max_rounds)
        for b in sorted(finished, key=lambda b: (b.lineup, b.block)):
            writer.add(b)

    def on_block(block) -> None:
        nonlocal kept
        with SIGNALS.held():  # written and counted together: the final message counts right
            journal.add(block)
            kept += 1
        if writer is not None:
            writer.add(block)

    try:
        run = runner.run_tournament(config, progress=progress, record=writer is not None, on_block=on_block,
                                    finished=finished, cheating=cheating)
    except BaseException as exc:
        journal.close()
        exc.escoba_note = (f"; {kept} of {total} blocks finished, kept in {jpath}: run the same command "
                           "with --resume to finish")
        raise
    journal.close()
    pairs = analysis.pair_stats(run)
    agents = analysis.agent_stats(run)
    ratings = analysis.fit_ratings(run)
    print(report.table(run, pairs, agents, ratings))
    results = report.results_dict(run, pairs, agents, ratings, git=source,
                                  provenance=provenance(journal.sittings, sitting, total))
    files = [report.write_json(prefix, results), *report.write_csv(prefix, pairs, agents, ratings)]
    if plot:
        files.append(report.write_plot(prefix, run, pairs, ratings))
    journal.remove()  # the result files hold everything now
    if writer is not None:
        files.append(Path(replays))
    print(f"\nwall {run.wall_s:.1f} s, CPU {run.cpu_s:.1f} s; wrote {', '.join(str(f) for f in files)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
