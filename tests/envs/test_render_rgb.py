"""The rgb_array render mode: frames, PettingZoo's render_test, hidden hands, the missing-Pillow error."""

from __future__ import annotations

import sys

import gymnasium
import numpy as np
import pytest
from pettingzoo.test import render_test

import escoba_env  # noqa: F401
from escoba_env import escoba_v0
from escoba_env.faces.render_rgb import HEIGHT, WIDTH

# A hand-made deal (2 players, dealer 1, so player_0 acts first): hands, table, then the stock.
HAND_0 = ["1o", "2o", "3o"]
TABLE = ["2c", "3c", "6b", "Sb"]  # no sum of 15: no capture at the deal


def deal(other_hand: list[str], own: list[str] = HAND_0) -> dict:
    used = set(own) | set(other_hand) | set(TABLE)
    names = [f"{v}{s}" for v in "1234567SCR" for s in "oceb"]
    return {"dealer": 1, "hands": [own, other_hand], "table": TABLE,
            "stock": [c for c in names if c not in used]}


def frame(options: dict) -> np.ndarray:
    env = escoba_v0.env(render_mode="rgb_array")
    env.reset(seed=0, options=options)
    return env.render()


def test_frames_are_rgb_arrays():
    img = frame(deal(["7e", "7b", "Cb"]))
    assert img.shape == (HEIGHT, WIDTH, 3) and img.dtype == np.uint8
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 10  # cards and text, not a blank felt


def test_another_players_hand_never_shows():
    """Two deals that differ only in the hand of the player not to act give the same picture."""
    a = frame(deal(["7e", "7b", "Cb"]))
    b = frame(deal(["1e", "2e", "3e"]))
    np.testing.assert_array_equal(a, b)
    own = frame(deal(["7e", "7b", "Cb"], own=["1o", "2o", "Co"]))
    assert (own != a).any()  # the viewer's own hand is drawn


def test_pettingzoo_render_test_and_single_agent_env():
    render_test(lambda render_mode=None: escoba_v0.env(render_mode=render_mode))
    env = gymnasium.make("escoba_env/Escoba-v0", render_mode="rgb_array")
    env.reset(seed=1)
    mask = env.unwrapped.action_masks()
    env.step(int(np.flatnonzero(mask)[0]))
    img = env.render()
    assert img.shape == (HEIGHT, WIDTH, 3) and img.dtype == np.uint8


def test_missing_pillow_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    env = escoba_v0.env(render_mode="rgb_array")
    env.reset(seed=0)
    with pytest.raises(ImportError, match=r"escoba-env\[render\]"):
        env.render()
