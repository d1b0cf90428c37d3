"""agents.heuristic.endgame: exact 2-player endgame values (empty stock), pinned against a brute-force
minimax.

The reference here (``brute_values``) is deliberately naive: recursive minimax over 1-game engine
copies of the *true* state, trying every legal action in every order (every naming order of a
capture choice, no canonical ordering, no sharing of nodes). ``solve`` only reads observations
and expands capture choices in increasing card order with a dead-end rule, so agreement on real
and hand-made positions pins both the rebuilt world and the pruning.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from agents.heuristic.endgame import EndgameAgent, endgame_rows, endgame_values, solve
from agents.spec.registry import make_agent
from agents.tournament.duplicate import play_duplicate
from agents.training import distill
from agents.worlds import take_games, worlds_from_observations
from escoba_env import EscobaEngine, Rules, card_name
from escoba_env.executors.engine import sample_actions, unpack_mask
from escoba_env.executors.observation import action_masks, encode
from tests.helpers import C, M, set_position

SPECS = ("expert", "greedy", "random")


# ------------------------------------------------------------------------------------ helpers


def legal_actions(e: EscobaEngine) -> list[int]:
    """Return the legal actions of game 0 of ``e``."""
    return np.flatnonzero(unpack_mask(e.legal, e.rules.num_cards)[0]).tolist()


def brute_values(state: EscobaEngine, game: int = 0) -> dict[int, int]:
    """Return {legal action: exact round point difference (seat to act minus the other)}.

    Plain recursive minimax on single-game engine copies: every legal action, every order.
    """
    observer = int(state.to_act[game])

    def after(e: EscobaEngine, a: int) -> int:
        child = take_games(e, np.array([0]), single_round=True)
        info = child.step(np.array([a]))
        if info.round_over[0]:
            pts = info.round_points[0]
            return int(pts[observer] - pts[1 - observer])
        vals = [after(child, b) for b in legal_actions(child)]
        return max(vals) if int(child.to_act[0]) == observer else min(vals)

    root = take_games(state, np.array([game]), single_round=True)
    return {a: after(root, a) for a in legal_actions(root)}


def as_dict(row: np.ndarray) -> dict[int, int]:
    """Return the finite entries of one ``solve`` row as {action: int value} (checked integral)."""
    acts = np.flatnonzero(~np.isnan(row))
    assert np.array_equal(row[acts], np.rint(row[acts])), "values are whole points"
    return {int(a): int(row[a]) for a in acts}


def obs_of(e: EscobaEngine) -> np.ndarray:
    """Return the observation (1, size) of the seat to act in game 0."""
    return encode(e, e.to_act[:1], np.array([0]))


def play_round(rules: Rules, games: int, seed: int, on_step=None) -> EscobaEngine:
    """Play single rounds, each seat by an agent of SPECS drawn per game; return the engine.

    ``on_step(engine, live, obs, masks)`` is called before every step.
    """
    eng = EscobaEngine(games, rules, single_round=True)
    eng.reset(seed=seed)
    agents = [make_agent(s, rules=rules, seed=seed + i) for i, s in enumerate(SPECS)]
    who = np.random.default_rng(seed).integers(len(agents), size=(games, rules.num_players))
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        seats = eng.to_act[live]
        obs = encode(eng, seats, live)
        masks = action_masks(eng, seats, live)
        if on_step is not None:
            on_step(eng, live, obs, masks)
        acts = np.zeros(games, np.int64)
        for k, agent in enumerate(agents):
            sel = np.flatnonzero(who[live, seats] == k)
            if sel.size:
                acts[live[sel]] = agent.act_batch(obs[sel], masks[sel])
        eng.step(acts)
    return eng


@cache
def endgame_positions(rules: Rules, games: int, seed: int) -> tuple[list[EscobaEngine], np.ndarray]:
    """Return (true 1-game states, observations) of every endgame decision of real rounds."""
    states, rows = [], []

    def keep(eng, live, obs, masks):
        for i in np.flatnonzero(endgame_rows(obs, rules)):
            states.append(take_games(eng, live[i:i + 1], single_round=True))
            rows.append(obs[i])

    play_round(rules, games, seed, keep)
    return states, np.array(rows)


def position(hands: list[str], table: str, pile0: str, *, rules: Rules | None = None, dealer: int = 1,
             last_capturer: int = -1) -> EscobaEngine:
    """Return a 1-game single-round engine at an empty stock, seat 0 to act.

    ``hands`` are card names per seat, ``pile0`` seat 0's capture pile; every card named nowhere is
    in seat 1's pile. No escobas yet.
    """
    rules = Rules() if rules is None else rules
    nc = rules.num_cards
    e = EscobaEngine(1, rules, single_round=True)
    e.reset(seed=0, dealer=dealer)
    hand_masks = [M(h) for h in hands]
    used = M(table) | M(pile0)
    for m in hand_masks:
        assert not used & m
        used |= m
    pile1 = ((1 << nc) - 1) & ~used
    return set_position(e, hand_masks, M(table), [M(pile0), pile1], np.arange(nc), nc, dealer=dealer,
                        last_capturer=last_capturer)


def step(e: EscobaEngine, *names: str) -> EscobaEngine:
    """Play/name the given cards in game 0 of ``e`` (in place); return ``e``."""
    for n in names:
        e.step(np.array([C(n)]))
    return e


def values_by_name(e: EscobaEngine) -> dict[int, int]:
    """Return ``solve``'s values of the position of game 0, checked against the brute force."""
    got = as_dict(solve(obs_of(e), e.rules)[0])
    assert got == brute_values(e)
    return got


# ------------------------------------------------------------- 1. cross-check: brute force


def test_solve_equals_brute_force_on_real_endgames():
    rules = Rules()
    states, obs = endgame_positions(rules, 40, 1)
    assert len(states) >= 200
    assert sum(int(s.pending[0]) >= 0 for s in states) >= 10  # capture choices at the root
    assert {int(s.hand_count[0]) for s in states} >= {1, 2, 3, 4, 5, 6}
    v = solve(obs, rules)
    assert v.shape == (len(states), 40) and v.dtype == np.float32
    for i, s in enumerate(states):
        assert as_dict(v[i]) == brute_values(s), i


VARIANTS = [Rules(jokers=1), Rules(jokers=2), Rules(prefer_single=True), Rules(last_play_escoba=False),
            Rules(sevens_rule="primera")]


@pytest.mark.parametrize("rules", VARIANTS, ids=["jokers1", "jokers2", "prefer_single", "no_last_escoba",
                                                 "primera"])
def test_solve_equals_brute_force_on_real_endgames_of_variants(rules):
    games = 40 if rules.jokers else 8
    states, obs = endgame_positions(rules, games, 2)
    assert len(states) >= 40
    assert any(int(s.pending[0]) >= 0 for s in states)
    v = solve(obs, rules)
    assert v.shape == (len(states), rules.num_cards)
    for i, s in enumerate(states):
        assert as_dict(v[i]) == brute_values(s), i


def random_endgame(rules: Rules, rng: np.random.Generator, hand: int) -> EscobaEngine:
    """Return a random endgame: ``hand`` cards to seat 0, ``hand`` or ``hand - 1`` to seat 1, 1-5 on
    the table (jokers, if any, among the first cards dealt), the rest in random piles."""
    nc = rules.num_cards
    perm = rng.permutation(nc)
    if rules.jokers:  # jokers first, then shuffled with the few cards that go to hands and table
        perm = np.concatenate([perm[perm >= 40], perm[perm < 40]])
        perm[:8] = rng.permutation(perm[:8])
    h1 = hand - int(rng.integers(2))
    nt = int(rng.integers(1, 6))
    cut = np.cumsum([hand, h1, nt])
    h0c, h1c, tc, rest = np.split(perm, cut)
    mine = rng.random(len(rest)) < 0.5

    def names(cards):
        return " ".join(card_name(int(c)) for c in cards)

    e = position([names(h0c), names(h1c)], names(tc), names(rest[mine]), rules=rules,
                 dealer=1 if h1 == hand else 0, last_capturer=int(rng.integers(-1, 2)))
    e.escobas[0] = rng.integers(0, 2, 2)
    return e


def test_solve_equals_brute_force_on_random_endgames():
    # Random tables of 1-5 cards: more capture choices than real play reaches.
    rules = Rules()
    rng = np.random.default_rng(11)
    states = [random_endgame(rules, rng, 3 if i % 3 else 2) for i in range(90)]
    v = solve(np.concatenate([obs_of(s) for s in states]), rules)
    for i, s in enumerate(states):
        assert as_dict(v[i]) == brute_values(s), i


def test_solve_equals_brute_force_on_random_joker_endgames():
    rules = Rules(jokers=1)
    rng = np.random.default_rng(0)
    states = [random_endgame(rules, rng, 2) for _ in range(60)]
    v = solve(np.concatenate([obs_of(s) for s in states]), rules)
    assert all(as_dict(v[i]) == brute_values(s) for i, s in enumerate(states))


# ---------------------------------------------------------- 2. hand-made positions, by hand
#
# Scoring (docs/rules.md §6, 2 sides): cards 21+ of 40, oros 6+, velo (7o), sevens (strictly most), one
# point per escoba. Each position puts most cards in the piles so that the categories are easy to
# count; the comments give each line of play and its points (seat 0 minus seat 1).

ALL_OROS_BUT_RO = "1o 2o 3o 4o 5o 6o 7o So Co"


def test_a_quiet_discard_beats_the_greedy_capture():
    # Seat 0: 5c 1b; seat 1: Rc; table Ro 3e 2b. Pile 0: nine oros + 7c 7e (seat 0 has the oros,
    # velo and sevens whatever happens; seat 1's 23-card pile gives it the cards point).
    # - 5c takes Ro (its only option, the greedy move): Rc sweeps 3e+2b, an escoba; 1b falls on the
    #   empty table and goes to seat 1, the last capturer. 3 - (cards + escoba) = +1.
    # - 1b is a discard (no subset of 10, 3, 2, 1... sums to 14): Rc must take 3e+2b (no escoba),
    #   5c takes Ro and 1b goes to seat 0, the last capturer. 3 - 1 = +2.
    e = position(["5c 1b", "Rc"], "Ro 3e 2b", ALL_OROS_BUT_RO + " 7c 7e", dealer=0)
    assert values_by_name(e) == {C("5c"): 1, C("1b"): 2}
    o, m = obs_of(e), action_masks(e, e.to_act[:1], np.array([0]))
    assert make_agent("greedy").act_batch(o, m)[0] == C("5c")
    assert make_agent("endgame:base=greedy").act_batch(o, m)[0] == C("1b")


# Sc against Se with 7o 4e 3b 5c 2c on the table: Sc takes {7o}, {4e 3b} or {5c 2c}, then Se takes
# one of the options left and, as last capturer, the rest of the table (never a sweep).
# Pile 0 (17): 1o-5o, 7c, 1c 3c 4c 6c Cc Rc, 1e 2e 3e 5e 6e. Pile 1 (16): 6o So Co Ro, 7e 7b, Ce Re,
# every basto but 3b.
# - {7o}: 19 cards to 21 (seat 1's point), oros 6 to 4 (seat 0), velo seat 0, sevens 2-2 (nobody):
#   2 - 1 = +1.
# - {4e 3b} or {5c 2c}: 20-20 cards (nobody), oros 5-5 (nobody), velo and sevens (3-1) to seat 1:
#   0 - 2 = -2.
VELO_POSITION = (["Sc", "Se"], "7o 4e 3b 5c 2c", "1o 2o 3o 4o 5o 7c 1c 3c 4c 6c Cc Rc 1e 2e 3e 5e 6e")


def test_the_best_capture_option_is_the_single_velo_not_a_bigger_one():
    e = position(*VELO_POSITION)
    assert values_by_name(e) == {C("Sc"): 1}


def test_a_capture_choice_at_the_root_values_every_name():
    e = step(position(*VELO_POSITION), "Sc")
    assert int(e.pending[0]) == C("Sc")
    # Naming 7o executes {7o}; naming any other card executes the pair holding it.
    assert values_by_name(e) == {C("7o"): 1, C("4e"): -2, C("3b"): -2, C("5c"): -2, C("2c"): -2}
    agent = make_agent("endgame")
    assert agent.act_batch(obs_of(e), action_masks(e, e.to_act[:1], np.array([0])))[0] == C("7o")


# Three 5s (5o 5c 5e) on the table and 5b played: the options are the three pairs. Under the primera
# rule a side missing a suit has no primera, so the pair {5c 5e} (ids 17, 18, not holding the lowest
# card 5o) is the one that matters. Named in increasing order it is 5c then 5e; naming 5e first
# leaves only lower cards (5o, 5c) to name: a dead end inside the tree.
PRIMERA = Rules(sevens_rule="primera")
# Seat 0: 5b, seat 1: Rc. Pile 0 (15): 1o 2o 3o 4o 6o 7o Ro and 1b 2b 3b 4b 6b 7b Cb Rb (no copas, no
# espadas). Pile 1 (20): So Co Sb, every copa but 5c Rc, every espada but 5e.
# Whatever pair 5b takes, Rc takes the last 5 with the last card of the round: an escoba for seat 1.
# Cards 18-22 (seat 1), oros 7+ (seat 0), velo seat 0. Primera: seat 1 has 7c 7e So Sb = 62; seat 0
# has 7o 7b = 42 plus 15 per five of copas / espadas, and needs both.
# - {5c 5e}: seat 0's primera 72 > 62: 3 (oros, velo, primera) - 2 (cards, escoba) = +1.
# - {5o 5c} or {5o 5e}: seat 0 lacks a suit, seat 1 scores primera: 2 - 3 = -1.
FIVES_MINE = (["5b", "Rc"], "5o 5c 5e", "1o 2o 3o 4o 6o 7o Ro 1b 2b 3b 4b 6b 7b Cb Rb")


def test_three_equal_cards_the_pair_reached_only_in_increasing_order_is_found():
    e = position(*FIVES_MINE, rules=PRIMERA)
    assert values_by_name(e) == {C("5b"): 1}


def test_three_equal_cards_at_the_root_every_naming_order_is_kept():
    e = step(position(*FIVES_MINE, rules=PRIMERA), "5b")
    assert int(e.pending[0]) == C("5b") and int(e.legal[0]) == M("5o 5c 5e")
    # 5o leaves {5o 5c} and {5o 5e}: -1. 5c and 5e each still reach {5c 5e}: +1 (5e then 5c is a
    # decreasing order, kept because the choice began before the search).
    assert values_by_name(e) == {C("5o"): -1, C("5c"): 1, C("5e"): 1}
    step(e, "5e")
    assert int(e.legal[0]) == M("5o 5c")
    assert values_by_name(e) == {C("5o"): -1, C("5c"): 1}


# The same three 5s with the pair chosen by seat 1 inside the tree (its dead end must count +inf for
# it, not -inf). Seat 0: 2b Rb (dealer 0: seat 0 plays, then 5b, then seat 0's last card). Pile 0
# (19): So, every copa but 5c, every espada but 5e. Pile 1 (15): 1o 2o 3o 4o 6o 7o Co Ro, 1b 3b 4b
# 6b 7b Sb Cb. Seat 1 has oros and velo in every line; primera: seat 1 has 7o 7b = 42 and needs both
# 5c and 5e (72); seat 0 has 7c 7e So = 52 plus its best basto (2b 12 or Rb 10).
# - 2b (no option: 2 + fives never makes 15): 5b takes a pair, Rb takes the last 5, 2b goes to seat 0.
#   Cards 22-18 (seat 0). Seat 1 takes {5c 5e}: primera 72 > 64, 1 - 3 = -2 (the other pairs: 0).
# - Rb takes one 5 (singles), 5b sweeps the two others (escoba), 2b falls to seat 1. Cards 21-19
#   (seat 0). Rb takes 5c or 5e: seat 1 lacks a suit, seat 0 scores primera 62: 2 - 3 = -1
#   (taking 5o: 1 - 4 = -3).
FIVES_THEIRS = (["2b Rb", "5b"], "5o 5c 5e", "So 1c 2c 3c 4c 6c 7c Sc Cc Rc 1e 2e 3e 4e 6e 7e Se Ce Re")


def test_three_equal_cards_chosen_by_the_opponent_inside_the_tree():
    e = position(*FIVES_THEIRS, rules=PRIMERA, dealer=0)
    assert values_by_name(e) == {C("2b"): -2, C("Rb"): -1}
    step(e, "Rb")  # a root capture choice between three single 5s
    assert values_by_name(e) == {C("5o"): -3, C("5c"): -1, C("5e"): -1}


# Dead ends on the deepest level of the tree: an ace on 6o 6c Se 4b Re has the options {6o Se},
# {6c Se} and {4b Re}. Naming 6o, 6c, 4b or Re executes one, and with the last card of the round the
# round ends right there; naming Se first leaves only 6o and 6c, both lower: a dead end beside the
# finished nodes, which must count -inf for the seat choosing if it is seat 0, +inf if seat 1.
EVEN_TABLE = "6o 6c Se 4b Re"


def test_a_dead_end_beside_the_last_capture_of_the_round_is_ignored():
    # Seat 0's 1e is the last card (seat 1 has none left); it takes a pair and, as last capturer,
    # the rest. Pile 0 (11): every oro but 6o, 7c 7e; seat 0 ends with 17 cards to 23: oros, velo,
    # sevens against cards: 3 - 1 = +2.
    e = position(["1e", ""], EVEN_TABLE, "1o 2o 3o 4o 5o 7o So Co Ro 7c 7e", dealer=0)
    assert values_by_name(e) == {C("1e"): 2}


def test_an_opponent_dead_end_beside_the_last_capture_of_the_round_is_ignored():
    # Seat 0's Rb can only take 5o (the other table cards are even, so no sum with them is 5); then
    # seat 1's 1e, the last card, takes a pair and the rest. Pile 0 (10): 1o-4o 7o So Co Ro 7c 7e,
    # so seat 0 ends with 12 cards to 28, 9 oros, the velo and 3 sevens: 3 - 1 = +2.
    e = position(["Rb", "1e"], EVEN_TABLE + " 5o", "1o 2o 3o 4o 7o So Co Ro 7c 7e")
    assert values_by_name(e) == {C("Rb"): 2}


# Jokers: *1 is the last card of the round (jokers=1: the short last deal gives it to seat 0 alone,
# dealer 1). Table 2e 3b Sc. Pile 0: the ten oros + 7c 7e (oros, velo, sevens); pile 1: 25 cards
# (cards). Whatever *1 takes, seat 0 is the last capturer and gets the whole table: +2, and +3 when
# the capture sweeps the table (an escoba with last_play_escoba).
JOKER_LAST = (["*1", ""], "2e 3b Sc", "1o 2o 3o 4o 5o 6o 7o So Co Ro 7c 7e")


@pytest.mark.parametrize("last_escoba, sweep", [(True, 3), (False, 2)])
def test_joker_stop_and_sweep_differ_only_by_the_last_play_escoba(last_escoba, sweep):
    rules = Rules(jokers=1, last_play_escoba=last_escoba)
    e = position(*JOKER_LAST, rules=rules)
    assert values_by_name(e) == {C("*1"): sweep}
    # *1 then 2e, 3b: the options left are {2e 3b} (stop: the played card's own id) and {2e 3b Sc}.
    step(e, "*1", "2e", "3b")
    assert int(e.legal[0]) == M("Sc *1")
    assert values_by_name(e) == {C("Sc"): sweep, C("*1"): 2}


# 5c against 5e with 1e Rb *1 on the table (jokers=1). 5c's options: {Rb}, {*1} (*1 = 10) and
# {1e *1} (*1 = 9). Pile 0 (20): the ten oros, 7c 7e, 1c 2c 3c 4c 6c Sc Cc Rc: seat 0 has cards, oros,
# velo and sevens (4) in every line; only seat 1's escoba varies.
# - {Rb}: 5e takes {1e *1} (a sweep with the last card: escoba) rather than {*1}: 4 - 1 = 3.
# - {*1}: 5e must take Rb (1e + Rb is 11), 1e stays: no escoba, 4.
# - {1e *1}: 5e sweeps Rb: 3.
# {*1} is reached only by naming *1 (id 40) and then "stop" (5c's own id, 17).
JOKER_NESTED = (["5c", "5e"], "1e Rb *1", "1o 2o 3o 4o 5o 6o 7o So Co Ro 7c 7e 1c 2c 3c 4c 6c Sc Cc Rc")


def test_nested_joker_options_at_the_root():
    rules = Rules(jokers=1)
    e = step(position(*JOKER_NESTED, rules=rules), "5c")
    assert values_by_name(e) == {C("1e"): 3, C("Rb"): 3, C("*1"): 4}
    step(e, "*1")
    assert int(e.legal[0]) == M("1e 5c")
    assert values_by_name(e) == {C("1e"): 3, C("5c"): 4}


def test_nested_joker_option_inside_the_tree():
    rules = Rules(jokers=1)
    e = position(*JOKER_NESTED, rules=rules)
    assert brute_values(e) == {C("5c"): 4}
    assert as_dict(solve(obs_of(e), rules)[0]) == {C("5c"): 4}


# ------------------------------------------------------------------- 3. which rows are solvable


def test_endgame_rows_are_exactly_the_2p_positions_with_an_empty_stock():
    rules = Rules()
    seen = []

    def check(eng, live, obs, masks):
        seen.append((endgame_rows(obs, rules), eng.stock_pos[live] >= 40))

    play_round(rules, 8, 4, check)
    got = np.concatenate([a for a, _ in seen])
    want = np.concatenate([b for _, b in seen])
    assert np.array_equal(got, want) and got.any() and not got.all()


@pytest.mark.parametrize("rules", [Rules(num_players=3), Rules(num_players=4),
                                   Rules(num_players=4, partnerships=True)], ids=["3p", "4p", "4p-teams"])
def test_no_endgame_rows_with_more_players_or_partnerships(rules):
    eng = EscobaEngine(6, rules, single_round=True)
    eng.reset(seed=1)
    rng = np.random.default_rng(0)
    empty_stock = []
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        obs = encode(eng, eng.to_act[live], live)
        assert not endgame_rows(obs, rules).any()
        assert np.isnan(endgame_values(obs, rules)).all()
        if (eng.stock_pos[live] >= 40).all():
            empty_stock.append(obs)
        eng.step(sample_actions(eng.legal, rng.random(6)))
    assert empty_stock  # the last deal was seen
    with pytest.raises(ValueError):
        solve(empty_stock[-1], rules)


def test_endgame_values_are_nan_outside_endgames_and_solve_refuses_them():
    rules = Rules()
    rows = []
    play_round(rules, 6, 7, lambda eng, live, obs, masks: rows.append(obs))
    obs = np.concatenate(rows)
    eg = endgame_rows(obs, rules)
    v = endgame_values(obs, rules)
    assert v.shape == (len(obs), 40)
    assert np.isnan(v[~eg]).all()
    assert np.array_equal(v[eg], solve(obs[eg], rules), equal_nan=True)
    assert not np.isnan(v[eg]).all(axis=1).any()  # every endgame row has a value
    with pytest.raises(ValueError, match="empty stock"):
        solve(obs, rules)
    with pytest.raises(ValueError, match="empty stock"):
        solve(obs[~eg][:1], rules)
    assert solve(obs[:0], rules).shape == (0, 40)


# ------------------------------------------------------------------------- 4. the agent


@pytest.mark.parametrize("spec, base", [("endgame", "expert"), ("endgame:base=greedy", "greedy")])
def test_endgame_agent_plays_a_best_action_in_endgames_and_its_base_elsewhere(spec, base):
    rules = Rules()
    agent = make_agent(spec, rules=rules, seed=0)
    plain = make_agent(base, rules=rules, seed=0)
    assert isinstance(agent, EndgameAgent) and agent.name == f"endgame+{base}"
    eng = EscobaEngine(12, rules, single_round=True)
    eng.reset(seed=9)
    endgames = overridden = 0
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        seats = eng.to_act[live]
        obs, masks = encode(eng, seats, live), action_masks(eng, seats, live)
        acts = agent.act_batch(obs, masks)
        base_acts = plain.act_batch(obs, masks)
        assert masks[np.arange(len(live)), acts].all()
        eg = endgame_rows(obs, rules)
        assert np.array_equal(acts[~eg], base_acts[~eg])
        assert agent.last_values.shape == masks.shape and np.isnan(agent.last_values[~eg]).all()
        for i in np.flatnonzero(eg):
            exact = brute_values(take_games(eng, live[i:i + 1], single_round=True))
            assert as_dict(agent.last_values[i]) == exact
            best = [a for a, x in exact.items() if x == max(exact.values())]
            # ties: the base's action if it is among the best, else the lowest best id
            assert int(acts[i]) == (int(base_acts[i]) if int(base_acts[i]) in best else min(best))
            endgames += 1
            overridden += int(acts[i]) != int(base_acts[i])
        full = np.zeros(eng.num_games, np.int64)
        full[live] = acts
        eng.step(full)
    assert endgames >= 60 and overridden >= 1


def test_endgame_spec_refuses_bad_bases_and_other_rules():
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("endgame:base=nosuchagent")
    with pytest.raises(ValueError, match="an agent spec other than endgame"):
        make_agent("endgame:base=endgame")
    agent = make_agent("endgame", rules=Rules(jokers=1))
    e = EscobaEngine(1, Rules(), single_round=True)
    e.reset(seed=0)
    with pytest.raises(ValueError, match="rules"):
        agent.act_batch(encode(e, e.to_act), action_masks(e, e.to_act))


def test_endgame_agent_beats_expert_in_a_duplicate_match():
    res = play_duplicate([make_agent("endgame"), make_agent("expert")], Rules(), deals=300, seed=5)
    assert res.rounds == 600 and res.names == ["endgame+expert", "expert"]
    assert res.diff[0] > 0


# ------------------------------------------------------------------------- 5. no peeking


def test_the_rebuilt_endgame_world_holds_the_true_opponent_hand():
    rules = Rules()
    states, obs = endgame_positions(rules, 40, 1)
    pick = np.linspace(0, len(states) - 1, 50).astype(int)
    truth = np.array([int(states[i].hands[0, 1 - int(states[i].to_act[0])]) for i in pick], np.uint64)
    for seed in (0, 1):
        w = worlds_from_observations(obs[pick], rules, np.random.default_rng(seed), 1)
        assert np.array_equal(w.hands[:, 1], truth)
        assert (w.stock_pos == 40).all()


# ------------------------------------------------------------------------- 6. distill labels


def test_distill_endgame_teacher_writes_exact_values(tmp_path):
    out = tmp_path / "tmp.npz"
    rc = distill.main(["--teacher", "endgame", "--values", "--labels", "200", "--out", str(out),
                       "--no-progress", "--behaviour", "expert", "greedy"])
    assert rc == 0
    d, meta = distill.load_labels(out, Rules())
    assert meta["teacher"] == "endgame" and len(d["action"]) >= 200
    obs = d["obs"].astype(np.float32)
    assert endgame_rows(obs, Rules()).all()
    assert (d["mask"].sum(axis=1) > 1).all()
    exact = solve(obs, Rules())
    legal = d["mask"] > 0
    assert np.array_equal(np.isnan(exact), ~legal)
    assert np.array_equal(d["values"][legal], exact[legal])
    assert np.isneginf(d["values"][~legal]).all()
    n = len(d["action"])
    chosen = d["values"][np.arange(n), d["action"]]
    assert np.array_equal(chosen, d["values"].max(axis=1))  # the label is an exactly best action
