"""The policy oracle: a CHEATING label teacher that plays each move out in the true deal with a policy."""

from __future__ import annotations

import numpy as np
import pytest

from agents.heuristic.expert import ExpertAgent
from agents.spec.registry import make_agent
from agents.training.distill import collect_labels
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode
from lab.policy_oracle import PolicyOracleAgent, make
from tests.helpers import other_hand_swapped, played_out


def _dealt(seed: int, plays: int) -> EscobaEngine:
    """Four games of a 2-player round after ``plays`` expert plays each."""
    e = EscobaEngine(4, Rules(), single_round=True)
    e.reset(seed)
    expert = ExpertAgent(Rules(), seed=0)
    for _ in range(plays):
        g = np.arange(4)
        e.step(expert.act_batch(encode(e, e.to_act, g), action_masks(e, e.to_act, g)))
    return e


@pytest.mark.parametrize("plays", [0, 7, 15])
def test_each_move_is_valued_by_playing_it_out_in_the_true_deal(plays):
    e = _dealt(seed=21 + plays, plays=plays)
    games = np.flatnonzero(~e.done & (e.pending < 0))
    obs, masks = encode(e, e.to_act[games], games), action_masks(e, e.to_act[games], games)
    teacher = PolicyOracleAgent(ExpertAgent(Rules(), seed=0), Rules(), seed=0, leaf="none")
    act = teacher.act_batch(obs, masks, state=(e, games))
    moves, values = teacher.last_moves, teacher.last_move_values
    expert = ExpertAgent(Rules(), seed=0)
    checked = 0
    for i, g in enumerate(games):
        lo, hi = moves.start[i], moves.start[i + 1]
        if hi - lo < 2:
            continue
        want = [played_out(e, g, int(moves.card[j]), int(moves.option[j]), expert) for j in range(lo, hi)]
        assert values[lo:hi].tolist() == want
        best = lo + int(np.argmax(want))
        assert act[i] == moves.card[best]
        checked += 1
    assert checked >= 2


def test_its_values_see_the_hidden_cards():
    """Two deals that look the same to the mover but differ in the other hand get other values."""
    e = _dealt(seed=5, plays=4)
    g = np.array([0])
    obs, masks = encode(e, e.to_act[g], g), action_masks(e, e.to_act[g], g)
    teacher = PolicyOracleAgent(ExpertAgent(Rules(), seed=0), Rules(), seed=0, leaf="none")
    teacher.act_batch(obs, masks, state=(e, g))
    first = teacher.last_move_values.copy()
    swapped = other_hand_swapped(e)
    assert np.array_equal(encode(swapped, swapped.to_act, g), obs)
    teacher.act_batch(obs, masks, state=(swapped, g))
    assert not np.array_equal(first, teacher.last_move_values)


def test_bad_teachers_are_refused():
    with pytest.raises(ValueError, match="fair agent"):
        PolicyOracleAgent(make_agent("oracle"), Rules())
    with pytest.raises(ValueError, match="fair agent"):
        PolicyOracleAgent("expert", Rules())
    with pytest.raises(ValueError, match="needs a rollout policy"):
        PolicyOracleAgent(None, Rules())
    with pytest.raises(ValueError, match="plays"):
        PolicyOracleAgent(ExpertAgent(Rules(num_players=3)), Rules(), leaf="none")
    with pytest.raises(ValueError, match="leaf"):
        PolicyOracleAgent(ExpertAgent(Rules()), Rules(), leaf="greedy")
    with pytest.raises(ValueError, match="state"):
        e = _dealt(seed=1, plays=0)
        g = np.arange(4)
        obs, masks = encode(e, e.to_act, g), action_masks(e, e.to_act, g)
        PolicyOracleAgent(ExpertAgent(Rules()), Rules()).act_batch(obs, masks)


def test_labels_from_the_policy_oracle_come_with_its_values():
    teacher = PolicyOracleAgent(ExpertAgent(Rules(), seed=0), Rules(), seed=0, leaf="net")
    assert teacher.needs_state and "cheating" in teacher.name
    # named by the policy's spec, not by the file a shipped name loads
    assert make(Rules(), 0).name == "policy-oracle(cheating):policy=neural-solo,sims=1,leaf=net"
    assert make_agent("python:lab.policy_oracle:make").name == make(Rules(), 0).name
    d = collect_labels(teacher, [ExpertAgent(Rules(), seed=0)], Rules(), 200, num_games=32, seed=3,
                       follow=0.0, values=True)
    v = np.where(d["mask"] > 0, d["values"], -np.inf)
    assert len(d["action"]) >= 200 and np.isfinite(v.max(axis=1)).all()
    best = v[np.arange(len(v)), d["action"]]
    assert np.array_equal(best, v.max(axis=1))  # the label is a best-valued action


@pytest.mark.slow
def test_the_policy_iteration_recipe_runs_tiny(tmp_path, capsys):
    """Labels of the policy oracle (command line), then a midgame network fitted on them."""
    from agents.training import distill, solo_fit

    labels, out = tmp_path / "po.npz", tmp_path / "api.pt"
    assert distill.main(["--out", str(labels), "--labels", "300", "--values", "--teacher",
                         "python:lab.policy_oracle:make", "--behaviour", "neural-solo",
                         "--follow", "0", "--games", "16", "--seed", "4", "--no-progress"]) == 0
    data, meta = distill.load_labels(labels)
    assert meta["teacher"] == "python:lab.policy_oracle:make" and "values" in data
    assert solo_fit.main([str(labels), "--phase", "midgame", "--loss", "adv", "--epochs", "1",
                          "--out", str(out)]) == 0
    agent = make_agent(f"checkpoint:{out}", seed=0)
    e = _dealt(seed=2, plays=3)
    g = np.arange(4)
    act = agent.act_batch(encode(e, e.to_act, g), action_masks(e, e.to_act, g))
    assert (action_masks(e, e.to_act, g)[np.arange(4), act] == 1).all()
    assert "wrote" in capsys.readouterr().out
