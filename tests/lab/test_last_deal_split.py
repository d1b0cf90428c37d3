"""lab/last_deal_split.py: the last-deal measurement agents play what they say."""

from __future__ import annotations

import numpy as np
import pytest

from agents.spec.registry import make_agent
from agents.worlds import observation_scalars
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode
from lab import last_deal_split


def _play_rounds(split, rules, games: int, seed: int, check) -> int:
    """Play single rounds of ``games`` games with ``split`` in every seat; call ``check(obs, masks, acts,
    late)`` at every step (``late``: the rows with an empty stock); return how many late rows it saw."""
    eng = EscobaEngine(games, rules, single_round=True)
    eng.reset(seed=seed)
    late_rows = 0
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        obs, masks = encode(eng, eng.to_act[live], live), action_masks(eng, eng.to_act[live], live)
        late = observation_scalars(obs, rules)["stock"] == 0
        acts = split.act_batch(obs, masks)
        check(obs, masks, acts, late)
        late_rows += int(late.sum())
        full = np.zeros(games, np.int64)
        full[live] = acts
        eng.step(full)
    return late_rows


def test_the_split_plays_the_network_before_the_last_deal_and_the_search_in_it():
    rules = Rules(num_players=4, partnerships=True)
    split = make_agent("python:lab.last_deal_split:net_then_search_2v2", rules=rules, seed=3)
    net = make_agent(f"checkpoint:{last_deal_split.WEIGHTS / 'escoba_2v2_move_v1.pt'},symmetric=true",
                     rules=rules, seed=3)
    search = make_agent("search:sims=1000", rules=rules, seed=3)

    def check(obs, masks, acts, late):
        assert np.array_equal(acts[~late], net.act_batch(obs[~late], masks[~late]))
        if late.any():
            search.reset(7)
            split.late.reset(7)
            assert np.array_equal(split.late.act_batch(obs[late], masks[late]),
                                  search.act_batch(obs[late], masks[late]))

    assert _play_rounds(split, rules, 6, 1, check) > 0
    solo = last_deal_split.solo_symmetric(rules=Rules(), seed=0)
    assert solo.name == "neural-solo:symmetric"


def test_solo_then_exact_plays_the_exact_endgame_after_the_stock():
    rules = Rules()
    split = make_agent("python:lab.last_deal_split:solo_then_exact", rules=rules, seed=0)
    assert split.name.endswith("escoba_2p_solo.pt then hybrid:sims=1000")
    solo, hybrid = make_agent("neural-solo", rules=rules), make_agent("hybrid", rules=rules, seed=0)

    def check(obs, masks, acts, late):
        assert np.array_equal(acts[~late], solo.act_batch(obs[~late], masks[~late]))
        if late.any():  # the exact solver, which needs no seed there
            assert np.array_equal(acts[late], hybrid.act_batch(obs[late], masks[late]))

    assert _play_rounds(split, rules, 16, 4, check) > 16 * 4
    peek = make_agent("python:lab.last_deal_split:peek_then_exact", rules=rules, seed=0)
    assert (peek.early.sims, peek.early.threat, peek.late.name) == (1000, "peek", "hybrid:sims=1000")


def test_a_split_at_a_stock_size_hands_that_deal_alone_to_the_other_agent(tmp_path):
    rules = Rules()
    solo, expert = make_agent("neural-solo", rules=rules), make_agent("expert", rules=rules)
    split = last_deal_split.LastDealSplit(solo, expert, rules, at=6)
    assert split.name.endswith(" then expert at stock 6")
    seen = {"six": 0, "other": 0}

    def check(obs, masks, acts, late):
        six = observation_scalars(obs, rules)["stock"] == 6
        assert np.array_equal(acts[six], expert.act_batch(obs[six], masks[six]))
        assert np.array_equal(acts[~six], solo.act_batch(obs[~six], masks[~six]))
        seen["six"] += int(six.sum())
        seen["other"] += int((~six & late).sum())  # the endgame stays with the first agent

    _play_rounds(split, rules, 16, 5, check)
    assert seen["six"] > 16 * 4 and seen["other"] > 16 * 4
    # the model card's unshipped networks are files a user writes first; one missing is a clear error
    with pytest.raises(ValueError, match="checkpoint file not found"):
        last_deal_split.playout_symmetric(rules, path=str(tmp_path / "solo3_playout.pt"))
