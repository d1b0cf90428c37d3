"""The Gymnasium vector env at every learner seat: rewards, seat redraws per slot, truncated games."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from agents.heuristic.greedy import GreedyAgent
from escoba_env import SingleAgentEscobaEnv
from escoba_env.faces.gym_vector import EscobaGymVectorEnv


def lowest(masks: np.ndarray) -> np.ndarray:
    """The learner policy of these tests: the legal action with the lowest id."""
    return np.argmax(np.asarray(masks) > 0, axis=-1)


def own_minus_best_other(points, side: int) -> int:
    """Return ``side``'s round points minus the best other side's (the ``round_points`` reward)."""
    return int(points[side]) - max(int(x) for t, x in enumerate(points) if t != side)


CONFIGS = [
    pytest.param({"num_players": 2, "target_score": 15}, id="2p"),
    pytest.param({"num_players": 3, "target_score": 11}, id="3p"),
    pytest.param({"num_players": 4, "target_score": 11}, id="4p"),
    pytest.param({"num_players": 4, "partnerships": True, "target_score": 11}, id="2v2"),
]


@pytest.mark.parametrize("config", CONFIGS)
def test_learner_reward_equals_the_single_agent_env_at_every_seat(config):
    """Over whole games, slot 0's rewards at seat s are the single-agent env's at seat s, step by step.

    Each round's reward is also recomputed from the round points of the learner's side, and at least
    one round per seat off side 0 pays the learner something else than seat 0 would get.
    """
    p = config["num_players"]
    for seat in range(p):
        vec = EscobaGymVectorEnv(2, opponents=GreedyAgent(), seat=seat, reward="round_points",
                                 autoreset_mode="same_step", **config)
        single = SingleAgentEscobaEnv(GreedyAgent(), seat=seat, reward="round_points", **config)
        side = single.rules.side_of(seat)
        vobs, vinfo = vec.reset(seed=20 + seat)
        sobs, _ = single.reset(seed=20 + seat)
        assert vinfo["seat"].tolist() == [seat, seat]
        rounds, differs, total = 0, False, 0.0
        while True:
            np.testing.assert_array_equal(vobs["observation"][0], sobs["observation"])
            actions = lowest(vobs["action_mask"])
            vobs, vrew, vterm, vtrunc, vinfo = vec.step(actions)
            sobs, srew, sterm, strunc, sinfo = single.step(int(actions[0]))
            assert vrew[0] == np.float32(srew), (seat, rounds)
            assert (bool(vterm[0]), bool(vtrunc[0])) == (sterm, strunc)
            if "round_points" in sinfo:
                pts = sinfo["round_points"]
                assert vinfo["_round_points"][0]
                np.testing.assert_array_equal(vinfo["round_points"][0], pts)
                assert srew == own_minus_best_other(pts, side)
                differs |= srew != own_minus_best_other(pts, 0)
                rounds += 1
            else:
                assert srew == 0.0
            total += srew
            if sterm or strunc:
                break
        assert sterm and rounds >= 2
        assert differs == (side != 0), (seat, "the learner's side must matter in these games")


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_random_seats_are_redrawn_for_every_episode_of_every_slot(mode):
    """With seat=None, each slot's learner seat is drawn again at each restart (not once per slot)."""
    n = 3
    env = EscobaGymVectorEnv(n, opponents="random", seat=None, num_players=4, episode="round",
                             autoreset_mode=mode)
    obs, info = env.reset(seed=5)
    per_slot = [[int(s)] for s in info["seat"]]
    restarting = np.zeros(n, bool)
    for _ in range(150):
        # The learner is to act in every live slot, at the seat that infos name.
        live = ~env.engine.done
        np.testing.assert_array_equal(env.engine.to_act[live], info["seat"][live])
        obs, rew, term, trunc, info = env.step(lowest(obs["action_mask"]))
        done = term | trunc
        if mode == "same_step":
            restarted = done
        else:
            restarted = restarting
            restarting = done
        for g in np.flatnonzero(restarted):
            per_slot[g].append(int(info["seat"][g]))
    for g, seats in enumerate(per_slot):
        assert len(seats) >= 6, (g, seats)
        assert len(set(seats)) >= 3, (g, seats)  # four seats, several episodes: redrawn per episode
    # Deterministic: the same seed draws the same seats again.
    again = EscobaGymVectorEnv(n, opponents="random", seat=None, num_players=4, episode="round",
                               autoreset_mode=mode)
    _, info2 = again.reset(seed=5)
    assert info2["seat"].tolist() == [s[0] for s in per_slot]


def _ends(vec, obs, restarting, steps):
    """Step the lowest legal actions ``steps`` times; check every game's end; return (obs, ends)."""
    ends = 0
    for _ in range(steps):
        live = ~restarting
        obs, rew, term, trunc, info = vec.step(lowest(obs["action_mask"]))
        assert not (term & trunc).any()  # exclusive in every slot at every step
        assert not term.any()  # nobody reaches the target in two rounds
        assert not rew.any()  # a cut game pays no game reward, and no game is won
        if vec.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP:
            assert not trunc[~live].any()  # a restarting slot's step: both flags False
            restarting = trunc.copy()
        np.testing.assert_array_equal(info.get("_winner", trunc), trunc)
        if trunc.any():
            final = info if "winner" in info else info["final_info"]
            assert final["winner"][trunc].tolist() == [-1] * int(trunc.sum())
            assert final["rounds"][trunc].tolist() == [2] * int(trunc.sum())
        ends += int(trunc.sum())
    return obs, ends


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_a_game_cut_by_max_rounds_is_truncated_not_terminated(mode):
    """max_rounds=2 with a target nobody reaches: truncated only, reward 0, the final observation kept."""
    kw = {"target_score": 60, "max_rounds": 2}
    vec = EscobaGymVectorEnv(2, opponents=GreedyAgent(), seat=1, autoreset_mode=mode, **kw)
    single = SingleAgentEscobaEnv(GreedyAgent(), seat=1, **kw)
    vobs, _ = vec.reset(seed=3)
    sobs, _ = single.reset(seed=3)
    while True:  # slot 0 is the single-agent game of the same seed, to its cut
        np.testing.assert_array_equal(vobs["observation"][0], sobs["observation"])
        actions = lowest(vobs["action_mask"])
        vobs, vrew, vterm, vtrunc, vinfo = vec.step(actions)
        sobs, srew, sterm, strunc, sinfo = single.step(int(actions[0]))
        assert not (vterm & vtrunc).any()
        assert (vrew[0], bool(vterm[0]), bool(vtrunc[0])) == (srew, sterm, strunc)
        if sterm or strunc:
            break
    assert (sterm, strunc, srew, sinfo["winner"]) == (False, True, 0.0, -1)
    assert single.game.round_index == 2
    if mode is AutoresetMode.SAME_STEP:
        assert vinfo["_final_obs"][0] and vinfo["_final_info"][0]
        np.testing.assert_array_equal(vinfo["final_obs"][0]["observation"], sobs["observation"])
        assert vinfo["final_info"]["winner"][0] == -1 and vinfo["final_info"]["rounds"][0] == 2
        # The row returned is the next game's first observation.
        assert vec.engine.episode[0] == 1 and vec.engine.round_index[0] == 0
        assert vec.engine.scores[0].sum() == 0 and not vec.engine.done[0]
        restarting = np.zeros(2, bool)
    else:
        assert "final_obs" not in vinfo
        np.testing.assert_array_equal(vobs["observation"][0], sobs["observation"])
        assert vinfo["winner"][0] == -1 and vinfo["rounds"][0] == 2
        assert vec.engine.truncated[0] and vec.engine.done[0]
        restarting = vtrunc.copy()
    # Both slots go on: every later game is cut too, each end flagged truncated only.
    _, ends = _ends(vec, vobs, restarting, 120)
    assert ends >= 3
    assert vec.engine.episode.min() >= 1
