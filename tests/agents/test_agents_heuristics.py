"""The greedy and expert agents: their choices in hand-made positions, named for the reason."""

from __future__ import annotations

import numpy as np
import pytest

from agents.heuristic.expert import ExpertAgent
from agents.heuristic.greedy import GreedyAgent
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode
from escoba_env.rulebook.cards import NUM_CARDS
from tests.helpers import C, M, set_position


def position(hands: list[str], table: str, stock: str = "", piles: list[str] | None = None, *,
             rules: Rules | None = None, last_capturer: int = -1) -> EscobaEngine:
    """Return a 1-game single-round engine in a hand-made position with seat 0 to play.

    ``hands`` and ``piles`` are card names per seat, ``stock`` the stock top first. Cards named
    nowhere go to the capture piles, dealt in id order to seats 0, 1, ... in turn (so category
    counts stay balanced). Seat ``num_players - 1`` is the dealer.
    """
    rules = Rules() if rules is None else rules
    p = rules.num_players
    e = EscobaEngine(1, rules, single_round=True)
    e.reset(seed=0)
    hand_masks = [M(h) for h in hands]
    pile_masks = [M(x) for x in (piles or [""] * p)]
    stock_ids = [C(x) for x in stock.split()]
    assert len(stock_ids) % (3 * p) == 0, "the stock holds whole deals"
    assert len({len(h.split()) for h in hands}) == 1, "seat 0 plays first: every hand has its size"
    used = M(table) | M(stock) if stock else M(table)
    for m in hand_masks + pile_masks:
        assert not used & m, "a card is named twice"
        used |= m
    rest = [c for c in range(NUM_CARDS) if not used >> c & 1]
    for i, c in enumerate(rest):
        pile_masks[i % p] |= 1 << c
    known = [c for c in range(NUM_CARDS) if c not in stock_ids]
    return set_position(e, hand_masks, M(table), pile_masks, known + stock_ids, NUM_CARDS - len(stock_ids),
                        dealer=p - 1, last_capturer=last_capturer)


def decide(agent, e: EscobaEngine) -> int:
    """Return the agent's action for the seat to act in game 0 of ``e``."""
    seat = e.to_act[:1]
    return int(agent.act_batch(encode(e, seat, np.array([0])), action_masks(e, seat, np.array([0])))[0])


# ----------------------------------------------------------------------------------- greedy


def test_greedy_takes_the_velo_over_two_low_cards():
    # Sc takes 7o (velo); Cc takes 2e + 4b (two low cards).
    e = position(["Sc Cc", "1b 2b"], "7o 2e 4b", stock="5b 6b 1o 1c 1e 2c")
    assert decide(GreedyAgent(), e) == C("Sc")


def test_greedy_names_the_velo_in_a_capture_choice():
    # So takes either 7o or 3c + 4e: a capture choice, where greedy names the velo.
    e = position(["So", "1b"], "7o 3c 4e")
    e.step(np.array([C("So")]))
    assert e.pending[0] == C("So")
    assert decide(GreedyAgent(), e) == C("7o")


def test_greedy_takes_the_escoba_over_a_seven_capture():
    # 1c sweeps 6c + Sb (escoba); 7e would take Sb with a seven.
    e = position(["1c 7e", "1b 2b"], "6c Sb")
    assert decide(GreedyAgent(), e) == C("1c")


def test_greedy_captures_rather_than_discards():
    # Rb can take 5c; 7o cannot capture but is the more valuable card.
    e = position(["7o Rb", "1b 2b"], "5c")
    assert decide(GreedyAgent(), e) == C("Rb")


def test_greedy_discards_a_low_card_not_the_velo():
    # Nothing captures (table 2e); the velo is the most valuable card, 3c and Rb tie at one card,
    # and the tie goes to the higher capture value.
    e = position(["7o 3c Rb", "1b 2b 4b"], "2e", stock="5b 6b 1o 1c 1e 2c")
    assert decide(GreedyAgent(), e) == C("Rb")


# ----------------------------------------------------------------------------------- expert


def test_expert_does_not_leave_a_table_of_5_when_three_reyes_are_unseen():
    # Table 2c: discarding 3b leaves 5 (a rey sweeps it; Ro, Rc, Re are unseen, Rb is in a pile),
    # discarding 1e leaves 3, which no card can sweep. Greedy (tie -> higher card) discards 3b.
    e = position(["3b 1e", "4o 4c"], "2c", stock="Ro Rc Re 5o 5c 5e", piles=["Rb", ""])
    assert decide(GreedyAgent(), e) == C("3b")
    assert decide(ExpertAgent(), e) == C("1e")


def test_expert_leaves_5_rather_than_11_when_every_rey_is_seen_and_the_fours_are_not():
    # Table 2c: discarding 3b leaves 5 (swept by a rey), discarding Cc leaves 11 (swept by a 4).
    # The expert leaves the total whose sweeping cards are all seen, whichever that is.
    reyes_seen = position(["3b Cc", "1o 1c"], "2c", stock="4o 4c 4e 4b 6o 6c",
                          piles=["Ro Rc", "Re Rb"])
    assert decide(ExpertAgent(), reyes_seen) == C("3b")
    fours_seen = position(["3b Cc", "1o 1c"], "2c", stock="Ro Rc Re Rb 6o 6c",
                          piles=["4o 4c", "4e 4b"])
    assert decide(ExpertAgent(), fours_seen) == C("Cc")


def test_expert_avoids_a_capture_that_leaves_a_sweepable_table():
    # Rb takes 5c and leaves Ro + 2e = 12 (needs a 3: every three is in a pile: safe);
    # 5e takes Ro and leaves 5c + 2e = 7 (needs a sota: all four unseen). Greedy takes with 5e
    # (equal value, first in order); the expert plays Rb.
    e = position(["5e Rb", "1o 1c"], "5c Ro 2e", stock="So Sc Se Sb 6o 6c",
                 piles=["3o 3c", "3e 3b"])
    assert decide(GreedyAgent(), e) == C("5e")
    assert decide(ExpertAgent(), e) == C("Rb")


def test_expert_takes_the_velo_rather_than_two_low_cards():
    # So takes 7o or 3c + 4e; taking the low cards would also leave the velo for a sota.
    e = position(["So", "1b"], "7o 3c 4e", stock="Sc Se Sb 6o 6c 6e")
    e.step(np.array([C("So")]))
    assert decide(ExpertAgent(), e) == C("7o")


def test_expert_prefers_a_seven_capture_while_sevens_are_undecided():
    # Sb takes 7c (a seven); Cb takes 2o + 4o (two oros). Sevens are 1-2 with 7c left: live.
    piles = ["7o Sc Se Cc Ce", "7e 7b So Co"]
    e = position(["Sb Cb", "1b 2b"], "7c 2o 4o", stock="1o 1c 1e 2c 3c 3e", piles=piles)
    assert decide(ExpertAgent(), e) == C("Sb")


def test_expert_prefers_oros_once_it_holds_three_sevens():
    # The same choice after the expert already holds three sevens: the sevens point is decided.
    piles = ["7o 7e 7b Sc Se Cc Ce", "So Co"]
    e = position(["Sb Cb", "1b 2b"], "7c 2o 4o", stock="1o 1c 1e 2c 3c 3e", piles=piles)
    assert decide(ExpertAgent(), e) == C("Cb")


def test_expert_counts_its_partners_sevens():
    # Four players: the expert holds 7o, seat 2 holds 7e and 7b. With partnerships its team has three
    # sevens (the point is decided), so it takes the oros; without, 7c still decides it: it takes 7c.
    piles = ["7o Sc Se Cc Ce", "So Co", "7e 7b", ""]
    hands = ["Sb Cb", "1b 2b", "1o 1c", "1e 2c"]
    team = position(hands, "7c 2o 4o", piles=piles, rules=Rules(num_players=4, partnerships=True))
    alone = position(hands, "7c 2o 4o", piles=piles, rules=Rules(num_players=4))
    assert decide(ExpertAgent(Rules(num_players=4, partnerships=True)), team) == C("Cb")
    assert decide(ExpertAgent(Rules(num_players=4)), alone) == C("Sb")


def test_expert_uses_the_exact_opponent_hand_when_the_stock_is_empty():
    # Stock empty, two players: the unseen cards are the opponent's hand (a sota, no rey).
    # Discarding 3b leaves 5 (safe: no rey left), discarding 5e leaves 7 (the sota sweeps).
    e = position(["3b 5e", "So 1o"], "2c")
    assert decide(ExpertAgent(), e) == C("3b")
    e = position(["3b 5e", "Ro 1o"], "2c")
    assert decide(ExpertAgent(), e) == C("5e")


@pytest.mark.parametrize("agent_cls", [GreedyAgent, ExpertAgent])
def test_heuristic_agents_ignore_their_seed(agent_cls):
    e = position(["3b 5e 7o", "So 1o 2o"], "2c", stock="Rb Rc 4o 4c 4e 4b")
    assert decide(agent_cls(seed=1), e) == decide(agent_cls(seed=2), e)
