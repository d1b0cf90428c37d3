"""The agents, worlds, rendering, terminal game and tournaments under the variants (docs/rules.md §11).

Jokers (ids 40, 41, wild) and escoba de mesa: every agent plays whole rounds legally in every seat
configuration, the heuristics value a joker, search worlds deal all 41/42 cards from what the
observer cannot see, and the tools (render, ``python -m escoba_arena.terminal``, ``evaluate.py`` with
replays) run end to end.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.heuristic.expert import ExpertAgent
from agents.heuristic.greedy import GreedyAgent
from agents.moves import enumerate_moves, move_actions
from agents.spec.registry import make_agent
from agents.tournament.play import agent_actions
from agents.worlds import (
    capture_summary,
    observation_masks,
    observation_scalars,
    worlds_from_observations,
)
from escoba_arena.terminal import default_opponent
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions
from escoba_env.executors.observation import PLANE, action_masks, encode
from escoba_env.faces.render import render_text
from escoba_env.rulebook.capture import capture_options
from tests.frontends.test_play import run_game
from tests.helpers import C, M

ROOT = Path(__file__).resolve().parents[2]
J1, J2 = 40, 41
VARIANTS = {"jokers1": {"jokers": 1}, "jokers2": {"jokers": 2}, "mesa": {"mesa_deal": True},
            "jokers2+mesa": {"jokers": 2, "mesa_deal": True}}
SEATS = {"2p": {}, "3p": {"num_players": 3}, "4p": {"num_players": 4},
         "2v2": {"num_players": 4, "partnerships": True}}
SPECS = ("random", "greedy", "expert", "search:sims=6", "oracle:sims=6")


def _rules(variant: str, seats: str) -> Rules:
    return Rules(**VARIANTS[variant], **SEATS[seats])


# ------------------------------------------------------------------ every agent plays legally


@pytest.mark.parametrize("seats", SEATS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_agent_plays_whole_rounds_legally(variant, seats):
    # Five single rounds; seat s of game g is played by agent (g + s) % 5, so every agent plays
    # every seat. Each action must be in the mask the agent was given (the engine would raise too).
    rules = _rules(variant, seats)
    agents = [make_agent(s, rules, seed=i) for i, s in enumerate(SPECS)]
    n, p = 5, rules.num_players
    e = EscobaEngine(n, rules, single_round=True)
    e.reset(seed=17)
    seat_agent = (np.arange(n)[:, None] + np.arange(p)[None, :]) % len(agents)
    calls = np.zeros(len(agents), np.int64)
    steps = 0
    while not e.done.all():
        who = seat_agent[np.arange(n), e.to_act]
        legal = e.legal.copy()
        actions = agent_actions(e, agents, who)
        live = ~e.done
        assert ((legal[live] >> actions[live].astype(np.uint64)) & np.uint64(1) == 1).all()
        calls += np.bincount(who[live], minlength=len(agents)) > 0
        e.step(actions)
        steps += 1
        assert steps < 400
    assert (calls > 0).all()  # every agent acted
    assert (e.card_count() == rules.num_cards).all()  # every card somewhere, once
    assert (e.round_index == 1).all()


def test_a_whole_game_to_21_with_two_jokers_and_mesa():
    rules = Rules(jokers=2, mesa_deal=True)
    agents = [make_agent("expert", rules), make_agent("greedy", rules)]
    e = EscobaEngine(4, rules)
    e.reset(seed=5)
    while not e.done.all():
        e.step(agent_actions(e, agents, e.to_act % 2))
    assert (e.scores.max(axis=1) >= 21).all()
    assert (e.winner >= 0).all()


# ------------------------------------------------------------------ moves and options


def test_capture_summary_agrees_with_capture_options_on_random_joker_tables():
    rng = np.random.default_rng(0)
    rules = Rules(jokers=2)
    tables, cards, expected = [], [], []
    for _ in range(400):
        pool = rng.choice(42, size=int(rng.integers(2, 8)), replace=False)
        card, table = int(pool[0]), sum(1 << int(c) for c in pool[1:])
        opts = capture_options(card, table, rules)
        union = inter = 0
        if opts:
            inter = opts[0]
            for o in opts:
                union, inter = union | o, inter & o
        tables.append(table)
        cards.append(card)
        expected.append((len(opts), union, inter))
    count, union, inter = capture_summary(np.array(tables, np.uint64), np.array(cards))
    got = list(zip(count.tolist(), union.tolist(), inter.tolist(), strict=True))
    assert got == expected


def test_an_agent_can_choose_a_capture_nested_in_a_larger_one():
    # 7o on *1, 6c, Rc, Re: the options are {*1} (joker = 8) and {*1, 6c} (joker = 2). The engine
    # offers 6c to name, and 7o itself ("stop") for {*1} alone; move_actions says 7o again for the
    # nested option and names 6c for the larger one.
    rules = Rules(jokers=1)
    e = _scripted(rules, ["7o 1c 1e", "1o 1b 2o"], ["*1", "6c", "Rc", "Re"])
    e.step(np.array([C("7o")]))
    assert e.legal[0] == M("6c 7o")
    obs = encode(e, e.to_act)
    moves = enumerate_moves(obs, rules)
    assert moves.option.tolist() == [1 << J1, M("6c") | 1 << J1]
    masks = action_masks(e, e.to_act)
    assert move_actions(moves, np.array([0]), obs, masks).tolist() == [C("7o")]  # stop: *1 alone
    assert move_actions(moves, np.array([1]), obs, masks).tolist() == [C("6c")]
    # Greedy takes the most: *1 and 6c.
    assert _decide(GreedyAgent(rules), e) == C("6c")
    stop = e.clone()
    stop.step(np.array([C("7o")]))
    assert int(stop.piles[0, 0]) == M("7o") | 1 << J1 and int(stop.table[0]) == M("6c Rc Re")


# ------------------------------------------------------------------ hand-made positions


def _scripted(rules: Rules, hands: list[str], table: list[str], dealer: int | None = None) -> EscobaEngine:
    """Return a 1-game engine dealt ``hands`` / ``table`` (names; "*1", "*2" are the jokers).

    The stock is every other card in id order; the dealer is the last seat, so seat 0 plays first.
    """
    hand_ids = [[C(x) for x in h.split()] for h in hands]
    table_ids = [C(x) for x in table]
    used = set(table_ids).union(*hand_ids)
    stock = [c for c in range(rules.num_cards) if c not in used]
    e = EscobaEngine(1, rules, single_round=True)
    d = rules.num_players - 1 if dealer is None else dealer
    e.reset(seed=0, dealer=d, hands=hand_ids, table=table_ids, stock=stock)
    return e


def _decide(agent, e: EscobaEngine) -> int:
    seat = e.to_act[:1]
    return int(agent.act_batch(encode(e, seat, np.array([0])), action_masks(e, seat, np.array([0])))[0])


def test_expert_and_greedy_name_the_table_joker_rather_than_the_sota():
    # 7c takes either So or *1 (worth 8); the caballo and the rey cannot join either. Taking So
    # would leave *1 on the table for the next player (any card worth 5 or more takes it).
    rules = Rules(jokers=2)
    e = _scripted(rules, ["7c 1b 2b", "1o 1c 2o"], ["*1", "So", "Cc", "Rc"])
    assert int(e.table[0]) == M("So Cc Rc") | 1 << J1  # 27 + joker: neither 15 nor two fifteens
    e.step(np.array([C("7c")]))
    assert e.pending[0] == C("7c")
    assert e.legal[0] == (1 << J1) | M("So")
    assert _decide(ExpertAgent(rules), e) == J1
    assert _decide(GreedyAgent(rules), e) == J1


def test_expert_sweeps_with_the_five_and_keeps_its_joker():
    # Table Ro: 5c + Ro and *1 + Ro (joker = 5) are both escobas; the joker stays in hand for later.
    rules = Rules(jokers=1)
    e = _scripted(rules, ["5c *1 4b", "1o 1c 2o"], ["Ro", "Rc", "Re", "Rb"])
    e.table[0] = M("Ro")
    e.piles[0, 1] |= M("Rc Re Rb")
    assert e.card_count()[0] == rules.num_cards
    assert _decide(ExpertAgent(rules), e) == C("5c")
    assert _decide(GreedyAgent(rules), e) == C("5c")


def test_expert_discards_a_plain_card_rather_than_its_joker_on_an_empty_table():
    # Nothing to capture; a joker laid alone would be swept by any card worth 5 or more.
    rules = Rules(jokers=2)
    e = _scripted(rules, ["3c *2 1b", "1o 1c 2o"], ["Ro", "Rc", "Re", "Rb"])
    e.table[0] = 0
    e.piles[0, 1] |= M("Ro Rc Re Rb")
    e.legal[0] = e.hands[0, 0]
    assert e.card_count()[0] == rules.num_cards
    assert _decide(ExpertAgent(rules), e) != J2
    assert _decide(GreedyAgent(rules), e) != J2


# ------------------------------------------------------------------ worlds


def _positions(rules: Rules, n: int, seed: int) -> list[EscobaEngine]:
    """Return snapshots of n random-play games at several points of a round (short deal included)."""
    e = EscobaEngine(n, rules, single_round=True)
    e.reset(seed=seed)
    rng = np.random.default_rng(seed)
    snaps = []
    step = 0
    while not e.done.all():
        if step % 5 == 0 or (e.stock_pos == rules.num_cards).any():
            snaps.append(e.clone())
        e.step(sample_actions(e.legal, rng.random(n)))
        step += 1
    return snaps


@pytest.mark.parametrize("variant", ["jokers1", "jokers2+mesa", "2v2-jokers2", "3p-jokers2-single"])
def test_worlds_show_the_observation_and_deal_every_card_once(variant):
    rules = {"jokers1": Rules(jokers=1), "jokers2+mesa": Rules(jokers=2, mesa_deal=True),
             "2v2-jokers2": Rules(num_players=4, partnerships=True, jokers=2),
             "3p-jokers2-single": Rules(num_players=3, jokers=2, prefer_single=True)}[variant]
    rng = np.random.default_rng(1)
    short_deals = captures = 0
    for e in _positions(rules, 12, seed=3):
        live = np.flatnonzero(~e.done)
        if not live.size:
            continue
        obs = encode(e, e.to_act[live], live)
        w = worlds_from_observations(obs, rules, rng, 2)
        assert np.array_equal(encode(w, np.zeros(w.num_games, np.int64)), np.repeat(obs, 2, axis=0))
        assert np.array_equal(w.legal, np.repeat(e.legal[live], 2))
        assert (w.card_count() == rules.num_cards).all()
        hands = np.bitwise_count(e.hands[live]).sum(axis=1)
        short_deals += int(((e.stock_pos[live] == rules.num_cards) & (hands % rules.num_players != 0)).sum())
        captures += int((e.pending[live] >= 0).sum())
        # The hidden cards (other hands + stock) are exactly the observer's unseen cards.
        unseen = observation_masks(obs, rules)[:, PLANE["unseen"]]
        stock = np.array([sum(1 << int(c) for c in w.deck[g, w.stock_pos[g]:]) for g in range(w.num_games)],
                         np.uint64)
        hidden = np.bitwise_or.reduce(w.hands[:, 1:], axis=1) | stock
        assert np.array_equal(hidden, np.repeat(unseen, 2))
    assert short_deals > 0 or rules.jokers == 0
    assert captures > 0


def test_worlds_do_not_see_where_an_unseen_joker_is():
    # Same public state; the joker is in the opponent's hand in one engine and in the stock in the
    # other. Observations and worlds are identical.
    rules = Rules(jokers=1)
    a = _scripted(rules, ["1c 2c 3c", "*1 1e 2e"], ["4o", "Sc", "Cb", "Rc"])
    b = a.clone()
    stock_card = int(b.deck[0, b.stock_pos[0]])
    b.hands[0, 1] = (int(b.hands[0, 1]) & ~(1 << J1)) | (1 << stock_card)
    b.deck[0, b.stock_pos[0]] = J1
    assert (b.card_count() == rules.num_cards).all()
    oa, ob = encode(a, a.to_act), encode(b, b.to_act)
    assert np.array_equal(oa, ob)
    assert observation_scalars(oa, rules)["stock"].tolist() == [41 - 10]
    wa = worlds_from_observations(oa, rules, np.random.default_rng(3), 200)
    wb = worlds_from_observations(ob, rules, np.random.default_rng(3), 200)
    for name in ("hands", "table", "piles", "deck", "stock_pos", "legal"):
        assert np.array_equal(getattr(wa, name), getattr(wb, name)), name
    # The joker is dealt sometimes to the opponent, sometimes to the stock, never to the observer.
    in_opp = (wa.hands[:, 1] >> np.uint64(J1)) & np.uint64(1)
    assert not ((wa.hands[:, 0] >> np.uint64(J1)) & np.uint64(1)).any()
    assert 0 < int(in_opp.sum()) < 200


def test_moves_of_a_joker_observation_use_the_joker_width():
    rules = Rules(jokers=2)
    e = _scripted(rules, ["*1 5c Sb", "1o 1c 2o"], ["Ro", "Rc", "2c", "2e"])
    obs = encode(e, e.to_act)
    assert obs.shape == (1, 13 * 42 + 26)
    moves = enumerate_moves(obs, rules)
    by_card = {}
    for c, o in zip(moves.card.tolist(), moves.option.tolist(), strict=True):
        by_card.setdefault(c, []).append(o)
    table = M("Ro Rc 2c 2e")
    assert by_card[J1] == capture_options(J1, table, rules)
    assert by_card[C("5c")] == [M("Ro"), M("Rc")]
    assert by_card[C("Sb")] == [0]


# ------------------------------------------------------------------ render, play, evaluate


def test_render_shows_jokers_by_name_in_spanish_and_french():
    rules = Rules(jokers=2, mesa_deal=True)
    e = _scripted(rules, ["*1 1c 1e", "1o 1b 2o"], ["*2", "6c", "Rc", "Re"], dealer=1)
    # Mesa: *2 then 6c are turned; *2 + 6c make 15 (joker = 9), an escoba of the table turned so far.
    assert int(e.piles[0, 1]) == M("6c") | 1 << J2 and int(e.escobas[0, 1]) == 1
    text = render_text(e)
    head = "Round 1 · dealer player_1 · stock 32 · target 21 · 2 jokers · escoba de mesa"
    assert text.splitlines()[0] == head
    assert "player_1: hand 3 · captured 2 cards, 0 oros, 0 sevens, 1 joker, 1 escoba" in text
    assert "player_0 to act · hand: 1c 1e *1" in text
    assert "player_0 to act · hand: A♥ A♠ *1" in render_text(e, french=True)


def test_play_with_two_jokers_runs_a_whole_game_on_scripted_input():
    rc, text, _ = run_game(["--opponent", "expert", "--seed", "8", "--jokers", "2", "--target-score", "6"])
    assert rc == 0
    assert text.splitlines()[0] == "Escoba · 2 players, to 6, sevens: most sevens, 2 jokers · seed 8"
    assert "*1" in text and "*2" in text
    assert "Game over: " in text


def test_play_with_mesa_announces_the_dealer_captures():
    # Seed 3: the dealer takes cards while turning up the table in the first round.
    rc, text, _ = run_game(["--opponent", "greedy", "--seed", "3", "--jokers", "2", "--mesa-deal",
                            "--target-score", "3"])
    assert rc == 0
    assert "Turning up the table, You take 2c 5o *2 (1 escoba)." in text


def test_play_faces_the_expert_by_default_under_the_variants():
    spec, note = default_opponent(Rules(jokers=2))
    assert spec == "expert"
    assert note is not None and "jokers" in note


def test_play_accepts_a_joker_by_name():
    out = io.StringIO()
    answers = io.StringIO("joker1\n" * 3 + "q\n")
    from escoba_arena.terminal import main
    rc = main(["--no-color", "--seed", "8", "--jokers", "2", "--opponent", "random"],
              stdin=answers, stdout=out)
    assert rc == 0
    assert "Game abandoned. Bye." in out.getvalue()


def test_evaluate_runs_with_two_jokers_and_mesa_and_its_replays_check(tmp_path):
    cmd = [sys.executable, str(ROOT / "evaluate.py"), "--agents", "random", "expert", "--rounds", "6",
           "--block-deals", "3", "--jokers", "2", "--mesa-deal", "--no-progress", "--no-plot",
           "--out", "res/j", "--save-replays", "rep"]
    r = subprocess.run(cmd, cwd=tmp_path, text=True, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "res/j.json").read_text())
    assert res["config"]["rules"]["jokers"] == 2 and res["config"]["rules"]["mesa_deal"] is True
    (pair,) = res["pairs"]
    assert pair["rounds"] == 12
    line = json.loads((tmp_path / "rep").glob("*.jsonl").__next__().read_text().splitlines()[0])
    assert sorted(line["rounds"][0]["deck"]) == list(range(42))
    r = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "--check-replays", "rep"], cwd=tmp_path,
                       text=True, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok: 12 games")
