"""The lab's label experiments run end to end on a tiny labels file (lab/agreement.py, lab/imitation.py)."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

from agents.heuristic.endgame import EndgameAgent
from agents.heuristic.expert import ExpertAgent
from agents.heuristic.greedy import GreedyAgent
from agents.search.pimc import SearchAgent
from agents.training.distill import collect_labels, save_labels
from escoba_env import Rules

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAIN = os.path.join(ROOT, "agents", "pretrained", "escoba_2p_plain.pt")


def _script(name: str):
    return importlib.import_module(f"lab.{name}")


@pytest.fixture(scope="module")
def endgame_labels(tmp_path_factory):
    """Return the path of 300 endgame decisions labelled with exact values."""
    rules = Rules()
    data = collect_labels(EndgameAgent(ExpertAgent(rules)), [ExpertAgent(rules), GreedyAgent(rules)], rules,
                          300, num_games=128, seed=3, values=True)
    path = tmp_path_factory.mktemp("labels") / "endgame.npz"
    save_labels(path, data, rules, teacher="endgame")
    return path


def test_agreement_prints_agreement_regret_and_best_action_share(endgame_labels, capsys):
    _script("agreement").main([str(endgame_labels), "--limit", "0", "--regret", "--agents", "expert",
                               "endgame", "greedy"])
    out = capsys.readouterr().out
    assert "teacher (endgame) = endgame: 1.000" in out  # the endgame agent is the teacher
    lines = {line.split(":")[0].strip(): line for line in out.splitlines() if "best action in" in line}
    assert set(lines) == {"teacher (endgame)", "expert", "endgame", "greedy"}
    assert lines["endgame"].endswith("0.000; a best action in 100.0% of decisions")
    greedy_regret = float(lines["greedy"].split("/")[-1].split(";")[0])
    assert greedy_regret > 0  # greedy misplays some endgames


def test_agreement_splits_the_regret_by_every_stock_size(tmp_path, capsys):
    rules = Rules()
    behaviour = [ExpertAgent(rules), GreedyAgent(rules)]
    data = collect_labels(SearchAgent(rules, seed=0, sims=16), behaviour, rules, 600, num_games=8, seed=2,
                          values=True)
    path = tmp_path / "all.npz"
    save_labels(path, data, rules, teacher="search:sims=16")
    _script("agreement").main([str(path), "--limit", "0", "--regret", "--by-stock", "--agents", "greedy"])
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("mean regret"))
    sizes = [int(part.split()[1]) for part in head.split(": ", 1)[1].split(", ")]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 0 and len(sizes) > 2
    assert set(sizes) <= {30, 24, 18, 12, 6, 0}  # one stock size per 2-player deal
    line = next(line for line in out.splitlines() if line.strip().startswith("greedy:"))
    parts = line.split(":", 1)[1].split(";")[0].strip().split(" / ")
    assert len(parts) == len(sizes) and all(len(p.split(".")[1]) == 4 for p in parts)


def test_agreement_regret_needs_values(endgame_labels, tmp_path):
    from agents.training.distill import load_labels

    arrays, _ = load_labels(endgame_labels)
    path = tmp_path / "novalues.npz"
    save_labels(path, {k: arrays[k] for k in ("obs", "mask", "action")}, Rules(), teacher="endgame")
    with pytest.raises(SystemExit, match="--values"):
        _script("agreement").main([str(path), "--regret", "--agents", "expert"])


def test_imitate_fine_tunes_and_scores_each_epoch(endgame_labels, capsys):
    imitation = importlib.import_module("lab.imitation")
    imitation.main([str(endgame_labels), "--agent", PLAIN, "--mode", "soft", "--param", "0.5",
                   "--epochs", "2", "--deals", "20", "--limit", "200"])
    out = capsys.readouterr().out
    assert "soft 0.5: 200 of 200 labels" in out
    ce = [float(line.split("cross-entropy ")[1].split(",")[0]) for line in out.splitlines()
          if line.startswith("epoch")]
    assert len(ce) == 2 and ce[1] < ce[0] and np.isfinite(ce).all()
