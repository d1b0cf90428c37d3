"""Strength ladder of the baseline agents, measured with duplicate deals (agents.tournament.duplicate).

Each pair plays ``--deals`` deals of a single 2-player round, every deal twice with the seats
swapped (so ``2 * deals`` rounds per pair), and reports points per round of each agent, the mean
difference and its 95% confidence interval paired over deals. A rung is "clear" when the CI's lower
bound is above 0.

    python benchmarks/strength.py                      # the full ladder, 1000 deals = 2000 rounds a pair
    python benchmarks/strength.py --deals 100 --only greedy-random expert-greedy
    python benchmarks/strength.py --json results.json  # also write the figures
    python benchmarks/strength.py --jokers 2 --deals 500 --budgets  # the ladder with two jokers

Pairs (``--only`` takes their keys): greedy-random, expert-greedy, search-expert (default budget),
endgame-expert and endgame-search (``endgame``: the expert playing the 2-player endgame exactly,
``agents.heuristic.endgame``), budget-N (search:sims=N vs expert, for every N of ``--budgets``),
oracle-search (the cheating oracle against the search, both at the default budget), hybrid-endgame
and hybrid-search1600 (``hybrid``: the search while the stock lasts, the exact endgame after it,
``agents.search.hybrid``; against ``endgame`` and against ``search:sims=1600``), solo-expert and solo-search
(``neural-solo``, the network-only agent, ``agents.nets.solo``; against ``expert`` and the search).

Rules variants (docs/rules.md §11): ``--jokers 1|2`` and ``--mesa-deal`` (escoba de mesa) change the
rules of every pair; the ladder stays 2-player single rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from agents.search.pimc import SearchAgent
from agents.spec.registry import make_agent
from agents.tournament.duplicate import play_duplicate
from escoba_env.faces.cli import (
    OneLineParser,
    add_rules_arguments,
    guarded_main,
    positive_int,
    rules_from_args,
    seed_arg,
)


def ladder(budgets: list[int]) -> list[tuple[str, str, str]]:
    """Return the (key, spec A, spec B) pairs of the ladder."""
    default = f"search:sims={SearchAgent.DEFAULT_SIMS}"
    pairs = [("greedy-random", "greedy", "random"), ("expert-greedy", "expert", "greedy"),
             ("search-expert", default, "expert"), ("endgame-expert", "endgame", "expert"),
             ("endgame-search", "endgame", default)]
    pairs += [(f"budget-{n}", f"search:sims={n}", "expert") for n in budgets
              if n != SearchAgent.DEFAULT_SIMS]
    pairs.append(("oracle-search", f"oracle:sims={SearchAgent.DEFAULT_SIMS}", default))
    pairs += [("hybrid-endgame", "hybrid", "endgame"), ("hybrid-search1600", "hybrid", "search:sims=1600")]
    pairs += [("solo-expert", "neural-solo", "expert"), ("solo-search", "neural-solo", default)]
    return pairs


def main(argv: list[str] | None = None) -> int:
    """Run the ladder and print one line per pair; return the exit status."""
    ap = OneLineParser(prog="strength.py", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deals", type=positive_int, default=1000, help="deals per pair (rounds = 2 x deals)")
    ap.add_argument("--seed", type=seed_arg, default=2024, help="deal seed (same deals for every pair)")
    ap.add_argument("--budgets", type=positive_int, nargs="*", default=[50, 200, 1600],
                    help="search budgets (sims) measured against the expert, besides the default")
    ap.add_argument("--only", nargs="*", default=None, help="keys of the pairs to run")
    ap.add_argument("--batch-deals", type=positive_int, default=250, help="deals per engine batch (memory)")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    add_rules_arguments(ap.add_argument_group("rules (defaults: escoba_env.Rules, docs/rules.md)"))
    args = ap.parse_args(argv)
    if args.json and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        raise ValueError(f"--json {args.json}: its folder does not exist")  # found now, not after the run
    rules = rules_from_args(args)
    results = []
    variant = "".join([f", {args.jokers} joker(s)" if args.jokers else "",
                       ", escoba de mesa" if args.mesa_deal else ""])
    print(f"duplicate deals, 2 players{variant}, single rounds; {args.deals} deals = {2 * args.deals} rounds "
          f"per pair; seed {args.seed}")
    print(f"{'pair':<40} {'A pts':>6} {'B pts':>6} {'A - B':>7} {'95% CI':>17}  clear  time")
    for key, a, b in ladder(args.budgets):
        if args.only is not None and key not in args.only:
            continue
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        res = play_duplicate([make_agent(a, rules, seed=1), make_agent(b, rules, seed=2)], rules,
                             deals=args.deals, seed=args.seed, batch_deals=args.batch_deals)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        m, lo, hi = res.diff
        pa, pb = res.points.mean(axis=0)
        print(f"{a + ' vs ' + b:<40} {pa:6.3f} {pb:6.3f} {m:+7.3f} [{lo:+.3f}, {hi:+.3f}]  "
              f"{'yes' if lo > 0 else 'NO':>5}  {wall:.0f}s wall, {cpu:.0f}s cpu", flush=True)
        results.append({"key": key, "a": a, "b": b, "deals": args.deals, "rounds": res.rounds,
                        "seed": args.seed, "points_a": pa, "points_b": pb, "diff": m, "ci_low": lo,
                        "ci_high": hi, "wall_s": wall, "cpu_s": cpu})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rules": rules.to_dict(), "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(guarded_main("strength.py", main))
