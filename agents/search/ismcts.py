"""OpenSpiel's IS-MCTS bot as an agent (``openspiel-ismcts:sims=N``), through ``escoba_env.faces.openspiel``.

For each decision the agent turns its observation into an OpenSpiel state: a determinization of
the observation (``agents.worlds``: its hand and every public card where they are, the hidden
cards dealt at random) started as a one-round ``python_escoba`` game at that position
(``EscobaGame.state_from_world``). OpenSpiel's own ``ISMCTSBot`` (``open_spiel.python.algorithms.
ismcts``, Cowling et al. 2012) then searches: each simulation resamples the hidden cards with
``EscobaState.resample`` (never the real ones: the agent sees only its observation), walks the
tree of information sets (keyed by information state strings) by UCT and evaluates new leaves by
``rollouts`` uniformly random playouts (OpenSpiel's ``RandomRolloutEvaluator``). The returns are the
round's point difference, so the search maximises points, as the ladder measures. The bot plays the
action visited most. Randomness: one ``numpy`` generator seeded by ``reset(seed)``.

Needs the ``[openspiel]`` extra (OpenSpiel is imported when the agent is built).
"""

from __future__ import annotations

import numpy as np

from agents.worlds import worlds_from_observations
from escoba_env.rulebook.rules import Rules

from ..base import Agent


class ISMCTSAgent(Agent):
    """OpenSpiel's IS-MCTS (``sims`` simulations per decision) on the ``python_escoba`` game."""

    name = "openspiel-ismcts"
    DEFAULT_SIMS = 100

    def __init__(self, rules: Rules | None = None, seed: int | None = None, sims: int = DEFAULT_SIMS,
                 uct_c: float = 2.0, rollouts: int = 1):
        if isinstance(sims, bool) or not isinstance(sims, int) or sims < 1:
            raise ValueError(f"sims must be a positive int, got {sims!r}")
        if isinstance(rollouts, bool) or not isinstance(rollouts, int) or rollouts < 1:
            raise ValueError(f"rollouts must be a positive int, got {rollouts!r}")
        if not uct_c >= 0:
            raise ValueError(f"uct_c must be >= 0, got {uct_c!r}")
        from escoba_env.faces import openspiel  # the [openspiel] extra

        self.sims, self.uct_c, self.rollouts = sims, float(uct_c), rollouts
        super().__init__(rules, seed)
        self._game = openspiel.load_game(**self.rules.to_dict(), episode="round")

    def act_batch(self, observations, action_masks, state=None):
        """Return the IS-MCTS action of each row (one search per row)."""
        obs = np.asarray(observations, np.float32)
        masks = np.asarray(action_masks)
        return np.array([self._decide(obs[i:i + 1], masks[i]) for i in range(len(obs))], np.int64)

    def _decide(self, obs: np.ndarray, mask: np.ndarray) -> int:
        """Return the action the bot picks for one observation (the only legal one if forced)."""
        from open_spiel.python.algorithms import ismcts, mcts  # the [openspiel] extra

        legal = np.flatnonzero(mask)
        if legal.size == 0:
            raise ValueError("openspiel-ismcts got an observation with no legal action")
        if legal.size == 1:
            return int(legal[0])
        world = worlds_from_observations(obs, self.rules, self.rng)
        world.scores[:] = 0  # returns are this round's points; the earlier rounds are a constant
        root = self._game.state_from_world(world)
        rs = np.random.RandomState(int(self.rng.integers(1 << 31)))
        evaluator = mcts.RandomRolloutEvaluator(n_rollouts=self.rollouts, random_state=rs)
        bot = ismcts.ISMCTSBot(self._game, evaluator, self.uct_c, self.sims, random_state=rs,
                               final_policy_type=ismcts.ISMCTSFinalPolicyType.MAX_VISIT_COUNT)
        bot.set_resampler(lambda s, player: s.resample(player, self.rng))
        action = int(bot.step(root))
        if not mask[action]:  # the world's legal actions are the observation's: a bug if this fires
            raise RuntimeError(f"IS-MCTS picked illegal action {action}")
        return action
