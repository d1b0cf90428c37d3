"""Guards of the ``llm`` agent's decisions found by mutation testing (issue 67): how votes are counted,
and the random fallback's draws.

The votes of one decision are asked concurrently, so which request gets which answer depends on timing;
the vote tests hand the agent's vote its answers in a known order instead (``LLMAgent._vote``, the step
that reads a decision's answers), with no endpoint.
"""

from __future__ import annotations

import numpy as np

from agents.external.llm import LLMAgent
from agents.external.llm_standin import StandIn
from agents.spec.registry import make_agent
from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.game import Game
from escoba_env.executors.observation import action_masks, encode
from escoba_env.faces import text
from escoba_env.faces.text import Move
from escoba_env.rulebook.rules import Rules

MOVES = text.legal_moves(*text.position_after(22, 12))
"""A decision of several legal moves (numbered 1, 2, ...)."""


def _agent(votes: int = 3) -> LLMAgent:
    """Return an agent of ``votes`` votes a decision (its endpoint is never asked)."""
    return LLMAgent(Rules(), 0, model="m", base_url="http://127.0.0.1:9/v1", votes=votes)


def _vote(agent: LLMAgent, answers: list[str]) -> Move | None:
    """Return the move ``agent`` plays when its votes answer ``answers`` in this order."""
    return agent._vote(answers, MOVES)[0]


def test_an_illegal_vote_does_not_void_the_legal_votes_after_it():
    """A vote that names no move is left out and the votes after it are still read: the majority of the
    legal ones decides; only when no vote names a move is the decision re-asked (with the first reason)."""
    agent = _agent()
    assert _vote(agent, ["I cannot tell", "2", "2"]) == MOVES[1]
    assert _vote(agent, ["no", "maybe", "1"]) == MOVES[0]
    move, reason, said = agent._vote(["no idea", "0"], MOVES)
    assert move is None and said == "no idea" and reason.startswith("no move found")


def test_a_tie_between_votes_goes_to_the_move_named_first():
    """Votes split evenly are settled by the order the answers came in: the move named first wins."""
    agent = _agent()
    assert _vote(agent, ["2", "1", "3"]) == MOVES[1]
    assert _vote(agent, ["3", "1", "1", "3"]) == MOVES[2]


def test_only_a_decision_whose_votes_disagree_counts_as_split():
    """``split_votes`` counts decisions whose legal votes named more than one move, never a unanimous
    one (an illegal vote does not make a split)."""
    agent = _agent()
    _vote(agent, ["2", "2", "2"])
    _vote(agent, ["nonsense", "1", "1"])
    assert agent.usage.split_votes == 0
    _vote(agent, ["1", "2", "2"])
    assert agent.usage.split_votes == 1 and agent.usage.forms == {"number": 8}


def test_random_fallbacks_are_the_same_asked_in_one_batch_or_one_by_one(standin):
    """A seeded agent's random fallbacks draw one number per decision, in order: a batch of decisions
    falls back to the same moves as those decisions asked one at a time, whatever the batch size."""
    e = EscobaEngine(6, Rules(), single_round=True)
    e.reset(3)
    g = np.arange(6)
    obs, masks = encode(e, e.to_act, g), action_masks(e, e.to_act, g)
    spec = f"llm:base_url={standin.url},model=garbage,max_retries=0,on_fail=random"
    whole, one = make_agent(spec, seed=4), make_agent(spec, seed=4)
    in_batch = whole.act_batch(obs, masks).tolist()
    assert [int(one.act_batch(obs[i:i + 1], masks[i:i + 1])[0]) for i in range(6)] == in_batch
    assert whole.take_usage().fallbacks == 6


class _LastListed(StandIn):
    """The stand-in, always answering the number of the last move listed."""

    def answer(self, model, chat, n, max_tokens=None):
        user = next(m["content"] for m in chat if m.get("role") == "user")
        return 200, {}, str(len(user.split("Your legal moves:")[-1].strip().splitlines()))


def test_a_capture_choice_of_the_as_de_oros_is_carried_out_without_asking_again():
    """The capture choice that follows a play is carried out as chosen, without a request, for every
    card, the as de oros (card 0) included: a model always answering the last move listed plays seed 8's
    sixth move with card 0 and a capture chosen card by card, asked once for it, and the game goes as
    the last listed moves play it (``position_after``)."""
    standin = _LastListed()
    try:
        rules = Rules()
        a = make_agent(f"llm:base_url={standin.url},model=m", rules=rules)
        g = Game(rules)
        g.reset(8)
        asked = zero = 0
        for _ in range(6):
            seat = g.to_act
            asked += len(text.legal_moves(g.observe(seat), rules)) > 1
            g.step(a.act(g.observe(seat), g.action_mask(seat)))
            while g.pending >= 0:
                zero += g.pending == 0
                g.step(a.act(g.observe(seat), g.action_mask(seat)))
        assert zero >= 1 and standin.requests == asked == a.usage.decisions
        np.testing.assert_array_equal(g.observe(g.to_act), text.position_after(8, 6)[0])
    finally:
        standin.close()
