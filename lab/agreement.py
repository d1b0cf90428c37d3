"""How often agents make the same choice, on the decisions of a labels file (teacher included).

    python -m lab.agreement runs/labels/search_150k.npz \
        --agents neural-2p-plain expert greedy
    python -m lab.agreement runs/labels/search_q.npz --limit 0 --regret
    python -m lab.agreement runs/labels2p/mid_test.npz --limit 0 --regret --by-stock \
        --agents neural-solo hybrid

With ``--regret`` (labels collected with ``--values``) it also prints each agent's mean regret per
decision: the teacher's value of its best action minus its value of the agent's action, by how many
cards the stock still holds, and how often it picks one of the teacher's best actions. Actions the
teacher did not value (a capture choice naming another
card of the same option) are left out. ``--by-stock`` splits the regret by every stock size instead of
the three groups (at 2 players the stock holds 30, 24, 18, 12, 6 or 0 cards, one size per deal).
"""

from __future__ import annotations

import os

import numpy as np

from agents.spec.registry import make_agent
from agents.training.distill import action_regret, load_labels
from agents.worlds import observation_scalars
from escoba_env.faces.cli import OneLineParser
from escoba_env.rulebook.rules import Rules


def main(argv: list[str] | None = None) -> None:
    """Print the share of decisions on which each pair (the labels' teacher included) agrees."""
    ap = OneLineParser(prog=os.path.basename(__file__), description=__doc__.split("\n\n")[0])
    ap.add_argument("labels")
    ap.add_argument("--agents", nargs="+",
                    default=["checkpoint:agents/pretrained/escoba_2p_plain.pt", "expert", "greedy"])
    ap.add_argument("--limit", type=int, default=30000, help="first N decisions (0: all)")
    ap.add_argument("--regret", action="store_true", help="also print the regret against the teacher values")
    ap.add_argument("--by-stock", action="store_true",
                    help="with --regret: one group per stock size, not stock >= 20 / 1-19 / 0")
    args = ap.parse_args(argv)
    arrays, meta = load_labels(args.labels)
    rules = Rules.from_dict(meta["rules"])
    n = args.limit or len(arrays["action"])
    obs = arrays["obs"][:n].astype(np.float32)
    mask = arrays["mask"][:n]
    choices = {f"teacher ({meta.get('teacher')})": arrays["action"][:n]}
    for spec in args.agents:
        choices[spec] = make_agent(spec, rules=rules, seed=0).act_batch(obs, mask)
    names = list(choices)
    print(f"{len(obs)} decisions with several legal actions")
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            print(f"{a} = {b}: {np.mean(choices[a] == choices[b]):.3f}")
    if args.regret:
        if "values" not in arrays:
            raise SystemExit("--regret needs labels collected with --values")
        values = arrays["values"][:n]
        stock = observation_scalars(obs, rules)["stock"]
        groups = {"stock >= 20": stock >= 20, "stock 1-19": (stock > 0) & (stock < 20), "stock 0": stock == 0}
        digits = 3
        if args.by_stock:
            groups = {f"stock {int(k)}": stock == k for k in sorted(set(stock.tolist()), reverse=True)}
            digits = 4
        print("mean regret per decision (points), by stock size: " + ", ".join(
            f"{g} ({int(m.sum())} decisions)" for g, m in groups.items()))
        for name, act in choices.items():
            regret = action_regret(values, mask, act)
            ok = np.isfinite(regret)
            parts = [f"{regret[m & ok].mean():.{digits}f}" if (m & ok).any() else "-"
                     for m in groups.values()]
            share = np.mean(regret[ok] <= 1e-6)
            print(f"  {name}: " + " / ".join(parts) + f"; a best action in {share:.1%} of decisions")


if __name__ == "__main__":
    main()
