"""How often agents make the same choice, on the decisions of a labels file (teacher included).

    python scripts/agreement.py runs/labels/search_150k.npz \
        --agents checkpoint:agents/pretrained/escoba_2p.pt expert greedy
"""

from __future__ import annotations

import argparse

import numpy as np

from agents.distill import load_labels
from agents.registry import make_agent
from escoba_env.rules import Rules


def main() -> None:
    """Print the share of decisions on which each pair (the labels' teacher included) agrees."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("labels")
    ap.add_argument("--agents", nargs="+", default=["checkpoint:agents/pretrained/escoba_2p.pt", "expert",
                                                   "greedy"])
    ap.add_argument("--limit", type=int, default=30000, help="first N decisions")
    args = ap.parse_args()
    arrays, meta = load_labels(args.labels)
    rules = Rules.from_dict(meta["rules"])
    obs = arrays["obs"][: args.limit].astype(np.float32)
    mask = arrays["mask"][: args.limit]
    choices = {f"teacher ({meta.get('teacher')})": arrays["action"][: args.limit]}
    for spec in args.agents:
        choices[spec] = make_agent(spec, rules=rules, seed=0).act_batch(obs, mask)
    names = list(choices)
    print(f"{len(obs)} decisions with several legal actions")
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            print(f"{a} = {b}: {np.mean(choices[a] == choices[b]):.3f}")


if __name__ == "__main__":
    main()
