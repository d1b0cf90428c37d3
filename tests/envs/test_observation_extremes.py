"""The observation's extremes, played: scripted deals reach the most escobas a round holds and the score
cap, and every face's observation of them lies inside its space.

Random play (``test_observations_in_space.py``) seldom goes near the bounds. Here:

- **Escobas.** Every escoba takes cards worth 15 (the played card and the table; the initial fifteen
  takes 15 or 30 as one or two escobas), so a round of the 40-card deck (values 1 to 10, four suits:
  220 in all) holds at most ``220 // 15 = 14`` escobas. ``DEAL_14`` gives them all to the dealer: its
  two initial-fifteen escobas, then twelve cycles (the other seat lays cards, the dealer sweeps) and
  a tail worth 10. The space allows ``W // 2 = 20``, so 14 lies inside; a bound below 14 would not.
- **Scores.** A side's observed score saturates at ``score_cap(rules) / target_score``, and only a
  tied lead that plays on gets there. At target 1 (cap 25) ``TIE_7`` ends round one 7-7, the game
  plays on, and ``DEAL_14`` (the next dealer's round) gives one side 18 more: 25, exactly the cap.
  OpenSpiel is the face whose chance nodes deal every round, so it plays this one.

Both decks are in deal order (the first hand of each seat interleaved from the seat after the dealer,
the four table cards, then each later hand); each player plays the card of its hand dealt first, and
in a capture choice the lowest table card it may name.
"""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import EscobaGymVectorEnv, EscobaVectorEnv, Rules, SingleAgentEscobaEnv, escoba_v0
from escoba_env.executors.observation import scalar_offsets, score_cap
from escoba_env.faces.common import observation_space

DEAL_14 = [12, 13, 14, 8, 9, 10, 36, 16, 32, 20, 11, 0, 1, 15, 24, 28, 25, 29, 26, 30, 27, 31, 17, 37, 18,
           38, 19, 39, 21, 33, 22, 34, 23, 35, 4, 5, 6, 7, 2, 3]
"""Dealer seat 1: table rey + 5 + caballo + 6 (two initial fifteens), then cycles 4 4 4 3, 3 3 3 1 1 4,
four of 7 8, three of 5 10, three of 6 9 (seat 0 lays, seat 1 sweeps), and the tail 2 2 2 2 1 1."""
DEALER_14 = 1
TIE_7 = [30, 27, 8, 34, 11, 14, 37, 17, 35, 22, 21, 19, 36, 16, 28, 26, 18, 39, 38, 23, 1, 7, 0, 9, 24, 4,
         29, 10, 6, 20, 3, 12, 5, 2, 15, 13, 31, 33, 32, 25]
"""Dealer seat 0: a round that ends 7 points to 7 (found by a search over play orders)."""
MOST_ESCOBAS = sum(4 * v for v in range(1, 11)) // 15
"""The most escobas one round of the 40-card deck holds: 14."""


class Script:
    """Plays the card of its hand dealt first in ``deck``; in a capture choice the lowest legal card."""

    needs_state = False

    def __init__(self, deck: list[int], rules: Rules):
        self.rank = {c: i for i, c in enumerate(deck)}
        self.choosing = scalar_offsets(rules)["capture_phase"]

    def reset(self, seed: int | None = None) -> None:
        """Nothing to re-seed: the script is the same every game."""

    def act(self, observation, action_mask, state=None) -> int:
        legal = np.flatnonzero(action_mask).tolist()
        if observation[self.choosing] > 0.5:
            return legal[0]
        return min(legal, key=self.rank.__getitem__)

    def act_batch(self, observations, action_masks, state=None) -> np.ndarray:
        return np.array([self.act(o, m) for o, m in zip(observations, action_masks, strict=True)], np.int64)


def _escobas(obs: np.ndarray, rules: Rules) -> int:
    """Return the most escobas any side shows in an observation (or a batch of them)."""
    e = scalar_offsets(rules)["escobas"]
    return int(np.asarray(obs)[..., e:e + 4].max())


def _inside(obs: np.ndarray, rules: Rules) -> bool:
    box = observation_space(rules)["observation"]
    return bool(((obs >= box.low) & (obs <= box.high)).all())


def _pettingzoo(rules: Rules) -> list[np.ndarray]:
    env = escoba_v0.env(rules=rules, episode="round")
    env.reset(seed=0, options={"deck": DEAL_14, "dealer": DEALER_14})
    script, seen = Script(DEAL_14, rules), []
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        seen += [env.observe(a)["observation"] for a in env.agents]
        assert env.unwrapped.state_space.contains(env.state()), "the global state lies outside its space"
        env.step(None if term or trunc else script.act(obs["observation"], obs["action_mask"]))
    return seen


def _single(rules: Rules) -> list[np.ndarray]:
    script = Script(DEAL_14, rules)
    seen = []
    for seat in (0, 1):  # the learner is the sweeping dealer, then the seat that lays
        env = SingleAgentEscobaEnv(script, seat=seat, rules=rules, episode="round")
        obs, _ = env.reset(seed=0, options={"deck": DEAL_14, "dealer": DEALER_14})
        done = False
        while not done:
            seen.append(obs["observation"])
            obs, _, term, trunc, _ = env.step(script.act(obs["observation"], obs["action_mask"]))
            done = term or trunc
        seen.append(obs["observation"])
    return seen


def _vector(env, rules: Rules) -> list[np.ndarray]:
    """Play ``DEAL_14`` by script in every slot of a vector env; return every observation it gave
    (a self-play env's final observations of every seat included)."""
    script = Script(DEAL_14, rules)
    obs, _ = env.reset(seed=0, options={"deck": DEAL_14, "dealer": DEALER_14})
    seen, done = [], np.zeros(env.num_envs, bool)
    while not done.all():
        seen.append(obs["observation"].copy())
        obs, _, term, trunc, info = env.step(script.act_batch(obs["observation"], obs["action_mask"]))
        done |= term | trunc
        seen += list(np.reshape(info.get("final_obs", []), (-1, obs["observation"].shape[-1])))
    return [*seen, obs["observation"].copy()]


def _gym_vector(rules: Rules) -> list[np.ndarray]:
    return _vector(EscobaGymVectorEnv(2, Script(DEAL_14, rules), seat=1, rules=rules, episode="round"), rules)


def _selfplay(rules: Rules) -> list[np.ndarray]:
    return _vector(EscobaVectorEnv(2, rules, episode="round"), rules)


def _openspiel_game(rules: Rules, dealer: int, decks: list[list[int]], episode: str = "game"
                    ) -> list[np.ndarray]:
    """Play an OpenSpiel episode dealt from ``decks`` (one a round, first dealer ``dealer``) by script;
    return every player's observation tensor at every decision, and at the end."""
    pytest.importorskip("pyspiel")
    from escoba_env.faces import openspiel as eos

    game = eos.load_game(**rules.to_dict(), episode=episode)
    state, seen, rnd = game.new_initial_state(), [], 0
    state.apply_action(dealer)
    feed = list(decks[0])
    scripts = [Script(d, rules) for d in decks]
    while not state.is_terminal():
        if state.is_chance_node():
            if not feed:  # a new round: its deck
                rnd += 1
                feed = list(decks[rnd])
            state.apply_action(feed.pop(0))
            continue
        p = state.current_player()
        obs = np.asarray(state.observation_tensor(p), np.float32)
        seen += [np.asarray(state.observation_tensor(q), np.float32) for q in range(rules.num_players)]
        state.apply_action(scripts[rnd].act(obs, np.isin(np.arange(rules.num_cards), state.legal_actions())))
    assert not feed and rnd == len(decks) - 1, "the game did not play every deck given"
    return seen + [np.asarray(state.observation_tensor(q), np.float32) for q in range(rules.num_players)]


def _openspiel(rules: Rules) -> list[np.ndarray]:
    return _openspiel_game(rules, DEALER_14, [DEAL_14], episode="round")


FACES = {"pettingzoo": _pettingzoo, "single-agent": _single, "gym-vector": _gym_vector,
         "selfplay-vector": _selfplay, "openspiel": _openspiel}


@pytest.mark.parametrize("face", sorted(FACES))
def test_the_most_escobas_a_round_holds_lie_inside_the_space_on_every_face(face):
    """The dealer's 14 escobas of ``DEAL_14`` (the most a round of the 40-card deck holds: a bound of
    13 would not hold them) show in the face's observations, every one inside the space."""
    rules = Rules()
    seen = FACES[face](rules)
    assert MOST_ESCOBAS == 14
    assert max(_escobas(o, rules) for o in seen) == MOST_ESCOBAS
    e = scalar_offsets(rules)["escobas"]
    assert observation_space(rules)["observation"].high[e] >= MOST_ESCOBAS
    for i, obs in enumerate(seen):
        assert _inside(obs, rules), f"{face}: observation {i} lies outside the space"


def test_the_score_cap_is_reached_by_a_tied_lead_that_plays_on():
    """At target 1, round one ends 7-7 (a tied lead: the game plays on) and the next round gives one
    side 18: 25 points, the score cap. The final observation reads the cap exactly, inside the space;
    a bound one point lower would not hold it."""
    rules = Rules(target_score=1)
    seen = _openspiel_game(rules, 0, [TIE_7, DEAL_14])
    s = scalar_offsets(rules)["scores"]
    cap = score_cap(rules)
    assert cap == 25
    top = max(float(o[s:s + 2].max()) for o in seen)
    assert top == np.float32(cap / rules.target_score)
    assert observation_space(rules)["observation"].high[s] == np.float32(cap / rules.target_score)
    assert top > np.float32((cap - 1) / rules.target_score)
    assert all(_inside(o, rules) for o in seen)
    scores = sorted({tuple(np.rint(o[s:s + 2] * rules.target_score).astype(int)) for o in seen})
    assert (7, 7) in scores and ((25, 7) in scores or (7, 25) in scores)
