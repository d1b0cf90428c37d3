"""The OpenSpiel game ``python_escoba`` (escoba_env.faces.openspiel) and the IS-MCTS agent
(agents.search.ismcts)."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from escoba_env import EscobaEngine, Rules  # noqa: E402
from escoba_env.executors.observation import encode_one  # noqa: E402
from escoba_env.faces import openspiel as eos  # noqa: E402
from escoba_env.rulebook.cards import cards_of, parse_card  # noqa: E402

CONFIGS = [
    {},
    {"num_players": 3},
    {"num_players": 4, "partnerships": True},
    {"num_players": 4, "sevens_rule": "primera", "bonus_sweeps": True},
    {"jokers": 2, "mesa_deal": True},
    {"jokers": 1, "prefer_single": True, "last_play_escoba": False},
    {"initial_fifteen": False, "sevens_rule": "most_sevens_tiebreak"},
]


def _random_round(game, rng):
    """Play one random episode; return (state, dealer, deck top first, decision actions)."""
    state = game.new_initial_state()
    dealer, deck, moves = None, [], []
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            assert sum(p for _, p in outcomes) == pytest.approx(1.0)
            a = outcomes[rng.integers(len(outcomes))][0]
            if dealer is None:
                dealer = a
            else:
                deck.append(a)
        else:
            legal = state.legal_actions()
            a = legal[rng.integers(len(legal))]
            moves.append(a)
        state.apply_action(a)
    return state, dealer, deck, moves


def test_game_facts_are_declared():
    g = eos.load_game()
    t = g.get_type()
    assert t.short_name == "python_escoba"
    assert t.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert t.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert t.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert (g.num_players(), g.num_distinct_actions(), g.max_chance_outcomes()) == (2, 40, 40)
    assert (g.min_utility(), g.max_utility(), g.max_game_length()) == (-44.0, 44.0, 161)
    assert g.observation_tensor_size() == 546
    j2 = eos.load_game(jokers=2)
    assert (j2.num_distinct_actions(), j2.max_chance_outcomes(), j2.observation_tensor_size()) == (42, 42,
                                                                                                  572)
    utility = pyspiel.GameType.Utility
    assert eos.load_game(num_players=4, partnerships=True).get_type().utility == utility.ZERO_SUM
    assert eos.load_game(num_players=3).get_type().utility == utility.GENERAL_SUM
    whole = eos.load_game(episode="game", max_rounds=10)
    assert (whole.min_utility(), whole.max_utility(), whole.max_game_length()) == (-1.0, 1.0, 1601)
    assert pyspiel.load_game("python_escoba(num_players=3)").num_players() == 3


@pytest.mark.parametrize("params", [{"num_players": 5}, {"episode": "match"}, {"max_rounds": 0},
                                    {"sevens_rule": "best"}])
def test_bad_parameters_raise_value_error(params):
    with pytest.raises(ValueError):
        eos.load_game(**params)


def test_unknown_parameter_is_refused():
    with pytest.raises(pyspiel.SpielError, match="Unknown parameter 'foo'"):
        eos.load_game(foo=1)


@pytest.mark.parametrize("params", CONFIGS + [{"episode": "game", "target_score": 4},
                                              {"episode": "game", "num_players": 4, "partnerships": True,
                                               "target_score": 3}])
def test_openspiel_random_sim_test(params):
    pyspiel.random_sim_test(eos.load_game(**params), num_sims=2, serialize=True, verbose=False)


def test_chance_nodes_deal_one_card_at_a_time():
    s = eos.load_game().new_initial_state()
    assert s.chance_outcomes() == [(0, 0.5), (1, 0.5)]
    s.apply_action(1)
    assert s.chance_outcomes() == [(c, 1 / 40) for c in range(40)]
    s.apply_action(24)
    assert [c for c, _ in s.chance_outcomes()] == [c for c in range(40) if c != 24]
    assert s.action_to_string(pyspiel.PlayerId.CHANCE, 3) == "Deal:1b"


@pytest.mark.parametrize("params", CONFIGS)
def test_matches_the_engine_move_by_move(params):
    """Random rounds replayed on the project's engine from the same deck: same legal actions, seat
    to act, observations and final points."""
    game = eos.load_game(**params)
    rules = Rules(**params)
    rng = np.random.default_rng(7)
    for _ in range(3):
        final, dealer, deck, moves = _random_round(game, rng)
        assert sorted(deck) == list(range(rules.num_cards))
        eng = EscobaEngine(1, rules, single_round=True)
        eng.reset(0, dealer=dealer, deck=deck)
        state = game.new_initial_state()
        for a in [dealer, *deck[:3 * rules.num_players + 4]]:
            state.apply_action(a)
        pos = 3 * rules.num_players + 4
        for a in moves:
            while state.is_chance_node():  # later deals: the next cards of the same deck
                state.apply_action(deck[pos])
                pos += 1
            seat = int(eng.to_act[0])
            assert state.current_player() == seat
            assert state.legal_actions() == eng.legal_actions(0)
            for p in range(rules.num_players):
                np.testing.assert_array_equal(state.observation_tensor(p), encode_one(eng, p))
            state.apply_action(a)
            info = eng.step(np.array([a]))
        assert state.is_terminal() and eng.done[0] and pos == rules.num_cards
        pts = info.round_points[0]
        side = [rules.side_of(s) for s in range(rules.num_players)]
        expect = [float(pts[side[s]] - max(x for j, x in enumerate(pts) if j != side[s]))
                  for s in range(rules.num_players)]
        assert state.returns() == expect == final.returns()
        if rules.num_sides == 2:
            assert sum(expect) == 0


def test_game_episode_plays_rounds_until_a_side_wins():
    game = eos.load_game(episode="game", target_score=6)
    rng = np.random.default_rng(3)
    for _ in range(3):
        state, _, deck, _ = _random_round(game, rng)
        scores = list(state._core.g.scores)
        assert len(deck) > 40 and max(scores) >= 6 and scores.count(max(scores)) == 1
        winner = scores.index(max(scores))
        assert state.returns() == [1.0 if s == winner else -1.0 for s in range(2)]


def _scripted_start():
    """Dealer 1; seat 0 holds 7o 1o 2o, seat 1 1c 1e 1b; table 3c 5c Sc Rc (no fifteen)."""
    s = eos.load_game().new_initial_state()
    cards = [parse_card(c) for c in ("7o", "1c", "1o", "1e", "2o", "1b", "3c", "5c", "Sc", "Rc")]
    for a in [1, *cards]:
        s.apply_action(a)
    return s


def test_capture_choice_is_consecutive_decisions_of_one_player():
    s = _scripted_start()
    assert s.current_player() == 0
    assert s.legal_actions() == [parse_card(c) for c in ("1o", "2o", "7o")]
    assert s.action_to_string(0, parse_card("7o")) == "Play:7o"
    s.apply_action(parse_card("7o"))  # options {Sc} and {3c, 5c}
    assert s.current_player() == 0
    assert s.legal_actions() == [parse_card(c) for c in ("3c", "5c", "Sc")]
    assert s.action_to_string(0, parse_card("Sc")) == "Take:Sc"
    s.apply_action(parse_card("Sc"))
    assert s.current_player() == 1
    obs = np.asarray(s.observation_tensor(0))
    assert sorted(np.flatnonzero(obs[40:80]).tolist()) == [parse_card("7o"), parse_card("Sc")]
    assert s.information_state_string(0) == (
        "p0 dealer:1 0<7o 1<? 0<1o 1<? 0<2o 1<? T<3c T<5c T<Sc T<Rc 0:7o 0+Sc")
    assert s.information_state_string(1) == (
        "p1 dealer:1 0<? 1<1c 0<? 1<1e 0<? 1<1b T<3c T<5c T<Sc T<Rc 0:7o 0+Sc")


def _hidden_elsewhere(s) -> int:
    """Return how many cards the other seats hold (seen from the seat to act)."""
    return sum(h.bit_count() for q, h in enumerate(s._core.hands()) if q != s.current_player())


def _random_decision_state(game, rng, moves):
    """Return a decision state after at least ``moves`` random decisions, with >= 2 cards in other hands."""
    s = game.new_initial_state()
    done = 0
    while True:
        if s.is_chance_node():
            outcomes = s.chance_outcomes()
            s.apply_action(outcomes[rng.integers(len(outcomes))][0])
        elif done >= moves and _hidden_elsewhere(s) >= 2:
            return s
        else:
            legal = s.legal_actions()
            s.apply_action(legal[rng.integers(len(legal))])
            done += 1


@pytest.mark.parametrize("params,moves", [({}, 9), ({"num_players": 4, "partnerships": True}, 5),
                                          ({"jokers": 2}, 7)])
def test_no_leak_and_resampling_keeps_the_players_view(params, moves):
    game = eos.load_game(**params)
    rng = np.random.default_rng(11)
    s = _random_decision_state(game, rng, moves)
    p = s.current_player()
    hands = s._core.hands()
    n = game.num_players()
    view = (s.information_state_string(p), s.information_state_tensor(p), s.observation_string(p),
            s.observation_tensor(p), s.legal_actions())
    seen_others = set()
    unseen = set(np.flatnonzero(np.asarray(s.observation_tensor(p))[10 * game.num_distinct_actions():
                                                                     11 * game.num_distinct_actions()]))
    for i in range(20):
        r = s.resample(p, np.random.default_rng(i))
        assert (r.information_state_string(p), r.information_state_tensor(p), r.observation_string(p),
                r.observation_tensor(p), r.legal_actions()) == view
        rh = r._core.hands()
        assert rh[p] == hands[p]
        assert [rh[q].bit_count() for q in range(n)] == [h.bit_count() for h in hands]
        for q in range(n):
            if q != p:
                assert set(cards_of(rh[q])) <= unseen  # only cards the player cannot see
        seen_others.add(tuple(rh[q] for q in range(n) if q != p))
        # The sampled world plays on to the end.
        while not r.is_terminal():
            r.apply_action(r.chance_outcomes()[0][0] if r.is_chance_node() else r.legal_actions()[0])
    assert len(seen_others) > 10  # the hidden cards vary
    # The player's own view never names another seat's card.
    tokens = set(s.information_state_string(p).split())
    for q, h in enumerate(hands):
        if q != p:
            for c in cards_of(h):
                assert f"{q}<{eos.card_name(c)}" not in tokens


def test_resample_keeps_earlier_rounds_and_a_deal_in_progress():
    game = eos.load_game(episode="game", target_score=30)
    rng = np.random.default_rng(5)
    s = game.new_initial_state()
    while s._core.g.round_index < 1:  # play the first round out
        s.apply_action(s.chance_outcomes()[rng.integers(len(s.chance_outcomes()))][0]
                       if s.is_chance_node() else s.legal_actions()[0])
    for _ in range(5):  # five cards of the second round's deal
        s.apply_action(s.chance_outcomes()[0][0])
    assert s.is_chance_node()
    start = s._round_from
    for i in range(5):
        for p in range(2):
            r = s.resample_from_infostate(p, pyspiel.UniformProbabilitySampler(i, 0.0, 1.0))
            assert r.history()[:start] == s.history()[:start]
            assert r.information_state_string(p) == s.information_state_string(p)
            mine = [a for (kind, who, a) in s.round_events() if kind == eos._CARD and who == p]
            assert [a for (kind, who, a) in r.round_events() if kind == eos._CARD and who == p] == mine


def test_state_from_world_starts_at_the_observed_position():
    from agents.worlds import worlds_from_observations

    game = eos.load_game()
    rules = Rules()
    s = _random_decision_state(game, np.random.default_rng(2), 4)
    p = s.current_player()
    obs = np.asarray(s.observation_tensor(p), np.float32)[None, :]
    world = worlds_from_observations(obs, rules, np.random.default_rng(0))
    root = game.state_from_world(world)
    assert root.current_player() == 0 and root.history() == []
    assert root.observation_tensor(0) == s.observation_tensor(p)
    assert root.legal_actions() == s.legal_actions()
    r = root.resample(0, np.random.default_rng(1))
    assert r.information_state_string(0) == root.information_state_string(0)
    with pytest.raises(ValueError, match="rules"):
        game.state_from_world(EscobaEngine(1, Rules(jokers=1)))


def test_ismcts_agent_is_legal_and_deterministic():
    from agents.spec.registry import make_agent
    game = eos.load_game()
    s = _random_decision_state(game, np.random.default_rng(4), 2)
    p = s.current_player()
    obs = np.asarray(s.observation_tensor(p), np.float32)
    mask = s._core.g.action_mask(p)
    picks = [make_agent("openspiel-ismcts:sims=20", seed=9).act(obs, mask) for _ in range(2)]
    assert picks[0] == picks[1] and mask[picks[0]] == 1
    forced = np.zeros(40, np.int8)
    forced[int(np.flatnonzero(mask)[0])] = 1
    assert make_agent("openspiel-ismcts:sims=5", seed=0).act(obs, forced) == int(np.flatnonzero(mask)[0])
    with pytest.raises(ValueError, match="sims"):
        make_agent("openspiel-ismcts:sims=0")


def test_example_plays_a_round(capsys):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[2] / "examples" / "openspiel_ismcts.py"
    spec = importlib.util.spec_from_file_location("openspiel_ismcts_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert example.main(["--sims", "5", "--seed", "3"]) == 0
    first = capsys.readouterr().out
    assert example.main(["--sims", "5", "--seed", "3"]) == 0
    assert capsys.readouterr().out == first  # same seed, same round
    assert first.splitlines()[-1].startswith("total over 1 round(s): IS-MCTS ")
    assert example.main(["--sims", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error:")


def test_evaluate_plays_the_ismcts_agent(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, str(root / "evaluate.py"), "--vs", "openspiel-ismcts:sims=3",
                        "--agents", "greedy", "--rounds", "1", "--workers", "1", "--no-plot", "--no-progress",
                        "--out", "res/os"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "res/os.json").read_text())
    assert res["config"]["entrants"] == ["openspiel-ismcts:sims=3", "greedy"]
    assert "openspiel-ismcts:sims=3" in r.stdout


def test_agent_without_openspiel_is_a_clear_error(monkeypatch):
    import sys

    import escoba_env
    from agents.spec.registry import make_agent

    monkeypatch.setitem(sys.modules, "pyspiel", None)  # as if OpenSpiel were not installed
    monkeypatch.delitem(sys.modules, "escoba_env.faces.openspiel")
    monkeypatch.delattr(escoba_env.faces, "openspiel")
    with pytest.raises(ValueError, match=r"needs OpenSpiel: pip install 'escoba-env\[openspiel\]'"):
        make_agent("openspiel-ismcts")
