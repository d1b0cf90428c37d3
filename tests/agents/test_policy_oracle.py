"""The policy oracle: a CHEATING label teacher that plays each move out in the true deal with a policy."""

from __future__ import annotations

import numpy as np
import pytest

from agents.distill import collect_labels
from agents.expert import ExpertAgent
from agents.moves import lowest_card, masks_to_uint64
from agents.registry import make_agent
from agents.search import PolicyOracleAgent
from agents.worlds import take_games
from escoba_env import EscobaEngine, Rules
from escoba_env.observation import action_masks, encode


def _dealt(seed: int, plays: int) -> EscobaEngine:
    """Four games of a 2-player round after ``plays`` expert plays each."""
    e = EscobaEngine(4, Rules(), single_round=True)
    e.reset(seed)
    expert = ExpertAgent(Rules(), seed=0)
    for _ in range(plays):
        g = np.arange(4)
        e.step(expert.act_batch(encode(e, e.to_act, g), action_masks(e, e.to_act, g)))
    return e


def _played_out(engine: EscobaEngine, game: int, card: int, option: int, policy) -> float:
    """The mover's round point difference after it plays (card, option) in ``game`` and ``policy``
    plays every seat to the end of the round: a one-game loop, the obvious way."""
    e = take_games(engine, np.array([game]), single_round=True)
    me = int(e.to_act[0])
    points = np.zeros(2)
    points += e.step(np.array([card])).round_points[0]
    while not e.done[0] and e.pending[0] >= 0:  # name the option's table cards
        legal = masks_to_uint64(action_masks(e, e.to_act, np.array([0])))
        points += e.step(lowest_card(np.array([option], np.uint64) & legal)).round_points[0]
    while not e.done[0]:
        g = np.array([0])
        act = policy.act_batch(encode(e, e.to_act, g), action_masks(e, e.to_act, g))
        points += e.step(act).round_points[0]
    return float(points[me] - points[1 - me])


def _other_hand_swapped(e: EscobaEngine) -> EscobaEngine:
    """A copy of game 0 of ``e`` whose other hand is swapped with the next cards of the stock: the
    mover's observation is unchanged, the deal is not."""
    other = 1 - int(e.to_act[0])
    swapped = take_games(e, np.array([0]), single_round=True)
    hand = [c for c in range(40) if (int(swapped.hands[0, other]) >> c) & 1]
    pos = int(swapped.stock_pos[0])
    stock = [int(c) for c in swapped.deck[0, pos:pos + len(hand)]]
    swapped.hands[0, other] = np.uint64(sum(1 << c for c in stock))
    swapped.deck[0, pos:pos + len(hand)] = hand
    return swapped


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
        want = [_played_out(e, g, int(moves.card[j]), int(moves.option[j]), expert) for j in range(lo, hi)]
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
    swapped = _other_hand_swapped(e)
    assert np.array_equal(encode(swapped, swapped.to_act, g), obs)
    teacher.act_batch(obs, masks, state=(swapped, g))
    assert not np.array_equal(first, teacher.last_move_values)


def test_bad_teachers_are_refused():
    with pytest.raises(ValueError, match="fair agent"):
        make_agent("policy-oracle:policy=oracle")
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
        make_agent("policy-oracle:policy=expert").act_batch(obs, masks)


def test_labels_from_the_policy_oracle_come_with_its_values():
    teacher = make_agent("policy-oracle:policy=expert,leaf=net", seed=0)
    assert teacher.needs_state and "cheating" in teacher.name
    # named by the policy's spec, not by the file a shipped name loads
    assert make_agent("policy-oracle").name == "policy-oracle(cheating):policy=neural-solo,sims=1,leaf=net"
    d = collect_labels(teacher, [ExpertAgent(Rules(), seed=0)], Rules(), 200, num_games=32, seed=3,
                       follow=0.0, values=True)
    v = np.where(d["mask"] > 0, d["values"], -np.inf)
    assert len(d["action"]) >= 200 and np.isfinite(v.max(axis=1)).all()
    best = v[np.arange(len(v)), d["action"]]
    assert np.array_equal(best, v.max(axis=1))  # the label is a best-valued action


def test_the_policy_iteration_recipe_runs_tiny(tmp_path, capsys):
    """Labels of the policy oracle (command line), then a midgame network fitted on them."""
    from agents import distill
    from agents.training import solo_fit

    labels, out = tmp_path / "po.npz", tmp_path / "api.pt"
    assert distill.main(["--out", str(labels), "--labels", "300", "--values", "--teacher",
                         "policy-oracle:policy=neural-solo,leaf=net", "--behaviour", "neural-solo",
                         "--follow", "0", "--games", "16", "--seed", "4", "--no-progress"]) == 0
    data, meta = distill.load_labels(labels)
    assert meta["teacher"].startswith("policy-oracle") and "values" in data
    assert solo_fit.main([str(labels), "--phase", "midgame", "--loss", "adv", "--epochs", "1",
                          "--out", str(out)]) == 0
    agent = make_agent(f"checkpoint:{out}", seed=0)
    e = _dealt(seed=2, plays=3)
    g = np.arange(4)
    act = agent.act_batch(encode(e, e.to_act, g), action_masks(e, e.to_act, g))
    assert (action_masks(e, e.to_act, g)[np.arange(4), act] == 1).all()
    assert "wrote" in capsys.readouterr().out
