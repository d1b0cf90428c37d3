"""Escoba in OpenSpiel: load the game with ``pyspiel.load_game`` and let OpenSpiel's IS-MCTS play it.

    pip install -e ".[openspiel]"
    python examples/openspiel_ismcts.py                 # one round, IS-MCTS (seat 0) vs random (seat 1)
    python examples/openspiel_ismcts.py --sims 200 --rounds 3 --seed 1

Importing ``escoba_env.faces.openspiel`` registers ``python_escoba``; after that any OpenSpiel tool loads
it by name. IS-MCTS samples the hidden cards from the information state
(``resample_from_infostate``), never from the real hands.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def main(argv: list[str] | None = None) -> int:
    """Play ``--rounds`` rounds of IS-MCTS against a uniform random bot; print each and the total."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=100, help="IS-MCTS simulations per decision")
    ap.add_argument("--rounds", type=int, default=1, help="rounds to play")
    ap.add_argument("--seed", type=int, default=0, help="seed of the deals and the bots")
    args = ap.parse_args(argv)
    if args.sims < 1 or args.rounds < 1 or args.seed < 0:
        print("error: --sims and --rounds must be >= 1 and --seed >= 0", file=sys.stderr)
        return 2
    try:
        import pyspiel
        from open_spiel.python.algorithms import ismcts, mcts

        import escoba_env.faces.openspiel  # noqa: F401  (registers python_escoba)
    except ImportError as e:
        print(f"error: this example needs OpenSpiel: pip install -e '.[openspiel]' ({e})", file=sys.stderr)
        return 1

    game = pyspiel.load_game("python_escoba(num_players=2)")
    rs = np.random.RandomState(args.seed)
    bots = [ismcts.ISMCTSBot(game, mcts.RandomRolloutEvaluator(1, rs), 2.0, args.sims, random_state=rs),
            pyspiel.make_uniform_random_bot(1, args.seed)]
    # OpenSpiel's default resampler draws from an unseeded sampler; a seeded one keeps runs repeatable.
    bots[0].set_resampler(lambda s, player: s.resample_from_infostate(
        player, pyspiel.UniformProbabilitySampler(int(rs.randint(1 << 31)), 0.0, 1.0)))
    total = np.zeros(2)
    for r in range(args.rounds):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rs.choice(outcomes, p=probs)))
            else:
                player = state.current_player()
                action = bots[player].step(state)
                print(f"  seat {player}: {state.action_to_string(player, action)}")
                state.apply_action(action)
        total += state.returns()
        print(f"round {r + 1}: returns {state.returns()} (IS-MCTS, random)")
    print(f"total over {args.rounds} round(s): IS-MCTS {total[0]:+.0f}, random {total[1]:+.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
