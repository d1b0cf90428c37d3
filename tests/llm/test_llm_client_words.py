"""The model client's words: what a refusal says, what the operator's log holds of an endpoint's page,
and the key scrubbed out of both, whatever its length.

The mutation run of ``agents/external/llm_client.py`` changed the status phrase, the log's cut and the
short-key case of ``scrub`` and no test noticed.
"""

from __future__ import annotations

import logging
import re

import pytest

from agents.external.llm_client import MAX_LOGGED, LLMError, scrub
from agents.spec.registry import make_agent
from tests.llm.llm_support import batch


def test_scrub_removes_a_short_key_whole_and_every_long_run_of_a_long_one():
    assert scrub("the key abc123 leaked, abc123 again", "abc123") == "the key [key] leaked, [key] again"
    assert scrub("no key here", "abc123") == "no key here"
    key = "sk-0123456789abcdef"
    assert scrub(f"a {key[3:13]} b {key[:7]} c", key) == "a [key] b sk-0123 c"  # 10 chars: a run; 7: not
    assert scrub(f"a {key[-7:]} b {key[-8:]}", key) == "a 9abcdef b [key]"  # at the key's end too
    assert scrub("two\nlines", "") == "two lines"
    assert scrub("abc123xyz", "abc123") == "[key]xyz"  # at the start
    assert scrub("xyzabc123", "abc123") == "xyz[key]"  # at the end
    assert scrub("abc123abc123 abc123", "abc123") == "[key] [key]"  # side by side: one run
    eight = "12345678"
    assert scrub(f"x{eight}y {eight[:7]}", eight) == "x[key]y 1234567"
    # every run of 8 or more, wherever it starts in the key, and runs that overlap make one [key]
    assert scrub(f"{key[:9]}|{key[-9:]}|{key[2:12]}{key[8:16]}.", key) == "[key]|[key]|[key]."
    assert scrub(key[4:11], key) == key[4:11]  # 7 characters: not a run
    assert scrub("a" * 9 + "b", "a" * 10) == "[key]b"  # a run found again one character on


@pytest.mark.parametrize("status, said", [(400, " Bad Request"), (418, " I'm a Teapot"), (499, "")])
def test_a_refusal_names_its_status_and_the_standard_phrase(standin, status, said, caplog):
    a = make_agent(f"llm:base_url={standin.url},model=e{status},attempts=1")
    with caplog.at_level(logging.WARNING, logger="agents.external.llm"), pytest.raises(LLMError) as err:
        a.act_batch(*batch())
    assert str(err.value) == (f"{standin.url}/chat/completions answered HTTP {status}{said}: the request was "
                              "refused (what the endpoint said is in the operator's log)")
    logged = [r.getMessage() for r in caplog.records]
    said = '{"error": {"message": "no"}}'  # a short page: whole
    assert logged == [f"{standin.url}/chat/completions answered HTTP {status}: {said}"]


def test_the_log_holds_a_long_page_cut(standin, caplog):
    a = make_agent(f"llm:base_url={standin.url},model=long400,attempts=1")
    with caplog.at_level(logging.WARNING, logger="agents.external.llm"), pytest.raises(LLMError):
        a.act_batch(*batch())
    (line,) = [r.getMessage() for r in caplog.records]
    words = re.sub(r"^.*? answered HTTP 400: ", "", line)
    page = '{"error": {"message": "' + "why " * 250
    assert MAX_LOGGED == 300 and words == page[:MAX_LOGGED] + "..."


def test_a_200_that_is_not_a_chat_completion_ends_the_run_and_the_log_has_its_words(standin, caplog):
    standin.raw_answer = b"<html>maintenance\n  window</html>"
    a = make_agent(f"llm:base_url={standin.url},model=legal,attempts=1")
    with caplog.at_level(logging.WARNING, logger="agents.external.llm"), pytest.raises(LLMError) as err:
        a.act_batch(*batch())
    url = f"{standin.url}/chat/completions"
    assert str(err.value) == f"{url} did not answer a chat completion (what it said is in the operator's log)"
    assert [r.getMessage() for r in caplog.records] == [
        f"{url} did not answer a chat completion: <html>maintenance window</html>"]


def test_token_counts_that_are_not_counts_are_read_as_zero_and_a_null_answer_as_empty(standin):
    standin.raw_answer = (b'{"choices": [{"message": {"content": null}}], '
                          b'"usage": {"prompt_tokens": true, "completion_tokens": -4}}')
    a = make_agent(f"llm:base_url={standin.url},model=legal,attempts=1,max_retries=1")
    a.act_batch(*batch())
    assert (a.usage.calls, a.usage.tokens_in, a.usage.tokens_out, a.usage.forfeits) == (2, 0, 0, 1)
    assert standin.bodies[1]["messages"][-2] == {"role": "assistant", "content": ""}  # null: no words
    standin.raw_answer = (b'{"choices": [{"message": {"content": "1"}}], '
                          b'"usage": {"prompt_tokens": 12, "completion_tokens": "7"}}')
    b = make_agent(f"llm:base_url={standin.url},model=legal,attempts=1,max_retries=0")
    b.act_batch(*batch())
    assert (b.usage.tokens_in, b.usage.tokens_out, b.usage.first_try) == (12, 0, 1)
