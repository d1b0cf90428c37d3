"""What the llm agent sends, word for word: its defaults, its refusals of bad settings, the request
body, and the chat of a re-ask (the model's answer cut at 2,000 characters, then why it was refused).

The mutation run of ``agents/external/llm.py`` changed each of these and no test noticed: another
default, a lost request field, a longer echo of a rambling answer, an error naming nothing.
"""

from __future__ import annotations

import pytest

from agents.external.llm import MAX_TOKENS, MAX_VOTES, LLMAgent
from agents.spec.registry import make_agent
from escoba_env.faces.text import ANSWER_PROTOCOL, IllegalAnswer, legal_moves, read_answer, reask
from escoba_env.rulebook.rules import Rules
from tests.llm.llm_support import batch


def test_the_agents_defaults():
    a = LLMAgent(model="m", base_url="http://127.0.0.1:9/v1")
    assert a.harness == {"protocol": ANSWER_PROTOCOL, "moves": "listed", "on_fail": "forfeit", "votes": 1,
                         "reasoning": "off", "max_tokens": MAX_TOKENS["off"], "temperature": 0.0,
                         "max_retries": 2}
    assert MAX_TOKENS == {"off": 48, "on": 1024}
    assert a.concurrency == 8 and not a.french
    e = a.endpoint
    assert (e.url, e.key_env, e.timeout, e.attempts, e.backoff, e.model) == (
        "http://127.0.0.1:9/v1/chat/completions", "OPENAI_API_KEY", 60.0, 4, 1.0, "m")
    with pytest.raises(ValueError) as no_url:  # no default endpoint: the agent must be told where
        LLMAgent(model="m")
    assert str(no_url.value) == "llm needs base_url=http(s)://HOST[:PORT]/v1, got ''"


@pytest.mark.parametrize("settings, message", [
    ({"base_url": ""}, "llm needs base_url=http(s)://HOST[:PORT]/v1, got ''"),
    ({"timeout": 0}, "llm: timeout must be positive, got 0"),
    ({"timeout": -2.5}, "llm: timeout must be positive, got -2.5"),
    ({"moves": "shown"}, "llm: moves must be one of listed, hidden, got 'shown'"),
    ({"on_fail": "retry"}, "llm: on_fail must be one of forfeit, random, got 'retry'"),
    ({"reasoning": "yes"}, "llm: reasoning must be one of off, on, got 'yes'"),
    ({"model": ""}, "llm needs a model: llm:model=NAME,base_url=URL"),
    ({"key_env": "sk-abc123"}, "llm: key_env names the environment variable that holds the key (e.g. "
                               "OPENAI_API_KEY), not the key itself"),
    ({"max_retries": 21}, "llm: max_retries must be in 0..20, got 21"),
    ({"max_retries": -1}, "llm: max_retries must be in 0..20, got -1"),
    *[({k: v}, f"llm: concurrency must be in 1..1024, attempts in 1..20 and votes in 1..{MAX_VOTES}")
      for k, v in [("concurrency", 0), ("concurrency", 1025), ("attempts", 0), ("attempts", 21),
                   ("votes", 0), ("votes", MAX_VOTES + 1)]],
    ({"temperature": 2.01}, "llm: temperature must be in [0, 2], got 2.01"),
    ({"temperature": -0.1}, "llm: temperature must be in [0, 2], got -0.1"),
    ({"backoff": -0.5}, "llm: backoff must be >= 0 and max_tokens positive"),
    ({"max_tokens": 0}, "llm: backoff must be >= 0 and max_tokens positive"),
])
def test_a_bad_setting_is_refused_naming_it(settings, message):
    """The class's own checks (Python callers; the registry checks a spec's values before them)."""
    with pytest.raises(ValueError) as err:
        LLMAgent(**{"model": "m", "base_url": "http://h/v1", **settings})
    assert str(err.value) == message
    assert LLMAgent(model="m", base_url="http://h/v1", timeout=0.01).endpoint.timeout == 0.01


def test_every_bound_of_the_settings_is_accepted_at_its_edge_and_kept():
    """Each range's edges are inside it (a bound off by one would refuse them), and what was asked is
    what the agent keeps: the rules, French, the endpoint's address without its trailing slash."""
    edges = [{"max_retries": 0}, {"max_retries": 20}, {"concurrency": 1}, {"concurrency": 1024},
             {"attempts": 1}, {"attempts": 20}, {"votes": 1}, {"votes": MAX_VOTES}, {"temperature": 0.0},
             {"temperature": 2.0}, {"backoff": 0.0}, {"max_tokens": 1}]
    for edge in edges:
        a = LLMAgent(model="m", base_url="http://h/v1", **edge)
        (k, v), = edge.items()
        got = getattr(a.endpoint if k in ("attempts", "backoff") else a, k)
        assert got == v, edge
    rules = Rules(num_players=3)
    a = LLMAgent(rules, model="m", base_url="http://h/X/", french=True)
    assert a.rules == rules and a.french
    assert a.url == a.endpoint.url == "http://h/X/chat/completions"


def test_the_request_body(standin):
    a = make_agent(f"llm:base_url={standin.url},model=legal,temperature=0.5,max_tokens=16")
    obs, masks = batch()
    a.act_batch(obs, masks)
    (body,) = standin.bodies
    assert set(body) == {"model", "messages", "temperature", "max_tokens", "stream"}
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("legal", 0.5, 16)
    assert body["stream"] is False
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_a_reask_sends_back_the_answer_cut_at_2000_characters_and_why_it_was_refused(standin):
    a = make_agent(f"llm:base_url={standin.url},model=ramble,max_tokens=900,max_retries=1")
    obs, masks = batch()
    a.act_batch(obs, masks)
    first, second = standin.bodies
    moves = legal_moves(obs[0], Rules())
    words = ("1.", "7", "de", "oros", "takes")
    text = " ".join(words[k % 5] for k in range(900))  # the stand-in's ramble of 900 words
    assert len(text) > 2000
    with pytest.raises(IllegalAnswer) as why:
        read_answer(text, moves)
    assert second["messages"][:-2] == first["messages"]
    assert second["messages"][-2] == {"role": "assistant", "content": text[:2000]}
    assert second["messages"][-1] == {"role": "user", "content": reask(str(why.value), len(moves), True)}
    assert reask("no move", 7, True) == ("That is not a legal move: no move. End your reply with a final "
                                        "line `Answer: N` with N from 1 to 7.")
    assert a.usage.reasks == 1 and a.usage.calls == 2 and a.usage.forfeits == 1


def test_a_reask_without_listed_moves_asks_for_the_move_written_out(standin):
    a = make_agent(f"llm:base_url={standin.url},model=garbage,moves=hidden,max_retries=1")
    obs, masks = batch()
    a.act_batch(obs, masks)
    first, second = standin.bodies
    moves = legal_moves(obs[0], Rules())
    with pytest.raises(IllegalAnswer) as why:
        read_answer("I would rather not say.", moves, listed=False)
    assert second["messages"][-1] == {"role": "user", "content": reask(str(why.value), len(moves), False)}
    assert second["messages"][-1]["content"].endswith("`Answer: ` and the move written out.")
