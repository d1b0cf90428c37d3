"""What a newcomer meets first: the README's engine snippet, the quickstart, .gitignore, help texts, plots."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from agents.tournament.cli import build_parser
from agents.tournament.report import plot_labels

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_engine_snippet_draws_new_numbers_every_step():
    code = re.search(r"## The engine in \w+ lines\n\n```python\n(.*?)```", README, re.S).group(1)
    loop = code[code.index("while "):]
    assert "default_rng" not in loop  # a generator made inside the loop repeats its numbers
    code = code.replace("4096", "64")  # the same snippet, smaller
    seen = []
    import escoba_env.executors.engine as engine_mod

    real = engine_mod.sample_actions

    def spy(legal, u):
        seen.append(np.array(u, copy=True))
        return real(legal, u)

    engine_mod.sample_actions = spy
    try:
        exec(compile(code, "README engine snippet", "exec"), {"__name__": "__readme__"})
    finally:
        engine_mod.sample_actions = real
    assert len(seen) > 10 and not np.array_equal(seen[0], seen[1])


def test_the_quickstart_says_how_to_get_the_cpu_build_of_torch():
    quick = README[README.index("## Quickstart"):README.index("## The engine in")]
    assert "CUDA build" in quick and "--index-url https://download.pytorch.org/whl/cpu" in quick


def test_results_and_replays_are_ignored_by_git():
    lines = (ROOT / ".gitignore").read_text().split()
    assert "results/" in lines and "replays/" in lines and "runs/" in lines


def test_evaluate_agent_help_lists_every_registered_agent():
    from agents.spec.registry import REGISTRY, help_text

    text = build_parser().format_help()
    assert help_text() in text
    for entry in REGISTRY.values():
        assert f"\n  {entry.usage()} " in text and entry.help in text
    for name in ("random", "hybrid", "neural-2p", "neural-solo", "neural-2v2", "neural-3p", "strong-2v2",
                 "strong-3p", "openspiel-ismcts", "checkpoint:PATH", "python:MODULE:FACTORY"):
        assert f"\n  {name} " in text


def test_plot_labels_name_checkpoints_by_their_distinct_end_not_their_start():
    specs = ["checkpoint:../runs/demo/checkpoints/latest.pt", "checkpoint:runs/other/checkpoints/latest.pt",
             "checkpoint:/x/agents/pretrained/escoba_2p.pt", "random",
             "search:sims=1600,epsilon=0.25,rollout=x"]
    assert plot_labels(specs) == ["neural demo/…/latest.pt", "neural other/…/latest.pt",
                                  "neural escoba_2p.pt", "random", "search:sims=1600,epsilon=…"]
    assert plot_labels(["checkpoint:../runs/nb/agent.pt", "random"]) == ["neural agent.pt", "random"]
