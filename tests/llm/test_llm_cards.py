"""Cards of language models: the harness settings are part of the fingerprint, failure counts are on
the card, and the leaderboard shows them in their own table (that the committed cards keep their
fingerprints is in ``tests/project/test_committed_cards.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.bench.card import card_config, card_dict, headline_text
from agents.bench.leaderboard import load_cards, render, summary, validate
from agents.external.llm_standin import StandIn
from agents.tournament.journal import run_key
from agents.tournament.runner import run_tournament, with_overrides


@pytest.fixture(scope="module")
def cards():
    """Two stand-in cards of a model that never answers a move: on_fail=forfeit and on_fail=random."""
    standin = StandIn()
    try:
        out = {}
        for on_fail in ("forfeit", "random"):
            spec = f"llm:base_url={standin.url},model=garbage,max_retries=0,on_fail={on_fail}"
            # the card's panel cut to greedy and one deal: what is checked is the card, not the play
            config = with_overrides(card_config(spec, quick=True), agents=("greedy",), deals=1, workers=1)
            out[on_fail] = (spec, config, card_dict(run_tournament(config), "v1", "2p", True, None, None))
        yield out
    finally:
        standin.close()


def test_cards_under_other_harness_settings_differ_in_fingerprint_and_report_their_failures(cards):
    (fs, fconfig, forfeit), (rs, rconfig, rand) = cards["forfeit"], cards["random"]
    assert forfeit["agent_code"] != rand["agent_code"]
    assert forfeit["agent_code"]["llm:garbage"]["harness"]["on_fail"] == "forfeit"
    # a journal of one never resumes the other
    assert run_key(fconfig, record=False) != run_key(rconfig, record=False)
    uf, ur = forfeit["llm_usage"][fs], rand["llm_usage"][rs]
    assert uf["forfeits"] == uf["decisions"] > 10 and uf["fallbacks"] == 0
    assert ur["fallbacks"] == ur["decisions"] > 10 and ur["forfeits"] == 0
    assert uf["harness"]["on_fail"] == "forfeit" and ur["harness"]["on_fail"] == "random"
    assert f"{uf['forfeits']} forfeits" in headline_text(forfeit) and "on_fail=random" in headline_text(rand)


def test_the_leaderboard_shows_language_models_in_their_own_table(cards):
    page = render([(Path(f"{k}.json"), c) for k, (_, _, c) in cards.items()])
    head = "## Language models: bench-v1, 2p (quick subset: not the benchmark)"
    assert head in page and page.count("| `garbage` |") == 2
    table = page.split(head)[1].split("\n\n")[2]
    rows = table.splitlines()[2:]
    assert {r.split(" | ")[2] for r in rows} == {"forfeit", "random"}  # the on_fail column
    forfeits = [r for r in rows if " | forfeit | " in r][0]
    assert " | 0.0% | " in forfeits and "(100.0%) | 0 (0.0%)" in forfeits  # legal 1st, forfeits, fallbacks
    assert "## bench-v1, 2p" not in page  # not among the agents' tables
    # a published summary row keeps what the table shows
    rows = summary([(Path(f"{k}.json"), c) for k, (_, _, c) in cards.items()])["cards"]
    assert render([], published=rows).count("| `garbage` |") == 2


def test_a_language_models_card_without_its_usage_is_refused():
    path, card = next((p, c) for p, c in load_cards() if c["agent"] == "neural-2p-plain" and c["quick"])
    card = dict(card, agent="llm:model=m,base_url=http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="without its usage and harness settings"):
        validate(card, str(path))
