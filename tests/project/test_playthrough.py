"""Recorded playthroughs of ``escoba_v0`` (seed, actions, observation digests, rewards), replayed.

The golden file ``tests/data/escoba_v0_playthrough.json`` pins whole games: any change to the
deal, the rules, the observation encoding, the masks, the infos or the rewards shows up as a
mismatch at the first step it affects. If such a change is intended, bump the env version where
it is user-visible and regenerate the file:

    python -m tests.project.test_playthrough --regenerate

The file is written by the code itself, so on its own it only catches changes. Beside it, the same
recorded games are replayed by the plain-Python reference (``tests/reference.py``): every action
legal there, the whole public state equal after each step, and the recorded rewards and final
scores those of the reference.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from escoba_env import escoba_v0
from tests.reference import RefGame, compare_state

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "escoba_v0_playthrough.json"
CASES = [
    {"name": "2 players, whole game", "config": {}, "seed": 2024, "policy_seed": 1},
    {"name": "2v2 partnerships, one round, round points",
     "config": {"num_players": 4, "partnerships": True, "episode": "round", "reward": "round_points"},
     "seed": 7, "policy_seed": 2},
    {"name": "3 players, primera, prefer_single, to 8 points",
     "config": {"num_players": 3, "sevens_rule": "primera", "prefer_single": True, "target_score": 8},
     "seed": 99, "policy_seed": 3},
]


def obs_digest(obs: dict) -> str:
    """Return a short SHA-256 digest of an observation dict (vector and mask bytes)."""
    h = hashlib.sha256(np.ascontiguousarray(obs["observation"], "<f4").tobytes())
    h.update(np.ascontiguousarray(obs["action_mask"], np.int8).tobytes())
    return h.hexdigest()[:16]


def info_digest(info: dict) -> str:
    """Return a short SHA-256 digest of an info dict (its canonical JSON)."""
    return hashlib.sha256(json.dumps(info, sort_keys=True).encode()).hexdigest()[:16]


def record(case: dict) -> dict:
    """Play ``case`` with random legal actions from its policy seed; return the recorded game."""
    env = escoba_v0.env(**case["config"], legal_moves_info=True)  # the digests pin the move list too
    env.reset(seed=case["seed"])
    rng = np.random.default_rng(case["policy_seed"])
    actions, steps = [], []
    while not any(env.terminations.values()) and not any(env.truncations.values()):
        agent = env.agent_selection
        obs = env.observe(agent)
        step = {"agent": agent, "obs": obs_digest(obs), "info": info_digest(env.infos[agent])}
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
        step["rewards"] = [env.rewards[a] for a in env.possible_agents]
        actions.append(action)
        steps.append(step)
    final = env.unwrapped.infos["player_0"]
    return {"name": case["name"], "config": case["config"], "seed": case["seed"], "actions": actions,
            "steps": steps, "final": {"scores": final["scores"], "winner": final["winner"]}}


def regenerate() -> None:
    """Rewrite the golden file from the cases above."""
    games = [record(c) for c in CASES]
    blocks = []
    for g in games:  # one step per line keeps the file small and its diffs readable
        keys = ("name", "config", "seed", "final", "actions")
        head = ",\n".join(f'  "{k}": {json.dumps(g[k])}' for k in keys)
        steps = ",\n".join(f"   {json.dumps(s)}" for s in g["steps"])
        blocks.append(f' {{\n{head},\n  "steps": [\n{steps}\n  ]\n }}')
    text = '{"env": "escoba_v0", "playthroughs": [\n' + ",\n".join(blocks) + "\n]}\n"
    assert json.loads(text)["playthroughs"] == games
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(text)
    print(f"wrote {GOLDEN} ({sum(len(g['actions']) for g in games)} steps)")


def load() -> list[dict]:
    """Return the recorded playthroughs."""
    return json.loads(GOLDEN.read_text())["playthroughs"]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_recorded_playthrough_replays_exactly(index):
    game = load()[index]
    env = escoba_v0.env(**game["config"], legal_moves_info=True)
    env.reset(seed=game["seed"])
    hint = "(if the change is intended: python -m tests.project.test_playthrough --regenerate)"
    for i, (action, step) in enumerate(zip(game["actions"], game["steps"], strict=True)):
        agent = env.agent_selection
        assert agent == step["agent"], f"step {i}: {agent} to act {hint}"
        assert obs_digest(env.observe(agent)) == step["obs"], f"step {i}: observation differs {hint}"
        assert info_digest(env.infos[agent]) == step["info"], f"step {i}: info differs {hint}"
        env.step(action)
        assert [env.rewards[a] for a in env.possible_agents] == step["rewards"], f"step {i} {hint}"
    assert all(env.terminations.values()) or all(env.truncations.values())
    final = env.unwrapped.infos["player_0"]
    assert {"scores": final["scores"], "winner": final["winner"]} == game["final"]


def _reference_rewards(ref: RefGame, info: dict, reward: str) -> list[float]:
    """The rewards per seat of one reference step: round-point differences (``round_points``:
    a side's points minus the best other side's), or +-1 to the winner when the game ends."""
    seats = range(ref.p)
    if not info["round_over"]:
        return [0.0] * ref.p
    if reward == "game":
        if not ref.done or ref.winner is None:
            return [0.0] * ref.p
        return [1.0 if ref.side(i) == ref.winner else -1.0 for i in seats]
    pts = info["round"]["points"]
    return [float(pts[ref.side(i)] - max(x for t, x in enumerate(pts) if t != ref.side(i))) for i in seats]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_recorded_playthrough_is_the_reference_game(index):
    game = load()[index]
    env = escoba_v0.env(**game["config"])
    env.reset(seed=game["seed"])
    raw = env.unwrapped
    eng = raw.engine
    # Only the shuffled deck of each round is read from the env: the reference plays the rest.
    ref = RefGame(raw.rules, int(eng.dealer[0]), [int(c) for c in eng.deck[0]],
                  single_round=raw.episode == "round")
    compare_state(eng, [ref])
    for i, (action, step) in enumerate(zip(game["actions"], game["steps"], strict=True)):
        assert action in ref.legal(), f"step {i}: {action} is not legal in the reference"
        info = ref.step(action)
        assert _reference_rewards(ref, info, raw.reward_kind) == step["rewards"], f"step {i}"
        env.step(action)
        if ref.needs_deck:
            ref.new_round([int(c) for c in raw.engine.deck[0]])
        compare_state(raw.engine, [ref])
    assert ref.done
    assert {"scores": ref.scores, "winner": -1 if ref.winner is None else ref.winner} == game["final"]


def test_golden_file_covers_every_case():
    assert [g["name"] for g in load()] == [c["name"] for c in CASES]
    assert all(len(g["actions"]) >= 36 for g in load())


if __name__ == "__main__":
    if "--regenerate" in sys.argv:
        regenerate()
    else:
        print(__doc__)
