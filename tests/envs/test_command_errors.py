"""Errors that point the way: a misspelt agent, agent parameter, option, choice or sub-command is one
short line that names the closest ones and where the list is, a non-zero exit, and nothing written.

Each case is the installed command as a user types it (``escoba_arena.commands``, in a fresh
interpreter, named as its console script). Fails on the commands as they were: ``escoba-evaluate
--agents random grredy`` printed a 425-character line listing every agent cut with ``...``, and
``escoba-play --opponent exprt`` one of 2,538 characters, with no "did you mean greedy".
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CASES = {
    "agent": ("evaluate", ["--agents", "random", "grredy", "--rounds", "2", "--no-progress"],
              "unknown agent 'grredy'; did you mean greedy? (escoba-evaluate --help lists them)"),
    "nested agent": ("evaluate", ["--agents", "random", "search:policy=grredy", "--rounds", "2"],
                     "(unknown agent 'grredy'; did you mean greedy?) (escoba-evaluate --help lists them)"),
    "vs agent": ("evaluate", ["--vs", "exprt", "--agents", "random", "--rounds", "2"],
                 "did you mean expert?"),
    "opponent": ("play", ["--opponent", "exprt"],
                 "unknown agent 'exprt'; did you mean expert? (escoba-play --help lists them)"),
    "parameter": ("evaluate", ["--agents", "random", "search:simz=3", "--rounds", "2"],
                  "agent 'search' has no parameter 'simz'; did you mean sims?"),
    "option": ("evaluate", ["--agnets", "random", "greedy"],
               "unrecognized arguments: --agnets random greedy; did you mean --agents?"),
    "train option": ("train", ["--totl-steps", "10"], "did you mean --total-steps?"),
    "table": ("bench", ["card", "greedy", "--table", "2pp"], "invalid choice: '2pp', maybe you meant '2p'?"),
    "sub-command": ("bench", ["crad", "greedy"], "invalid choice: 'crad', maybe you meant 'card'?"),
    "operator spec": ("arena", ["--allow-agent", "serch", "--port", "0"],
                      "--allow-agent: unknown agent 'serch'; did you mean search? (escoba-arena --help "
                      "lists them)"),
}


def _command(work: Path, name: str, args: list[str]) -> subprocess.CompletedProcess:
    code = (f"import sys\nfrom escoba_arena.commands import {name}\nsys.argv = ['escoba-{name}']\n"
            f"sys.exit({name}({args!r}))\n")
    work.mkdir()
    try:
        return subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True,
                              timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                "HOME": str(work)})
    except subprocess.TimeoutExpired as exc:  # a command that took the bad name and ran on (a server)
        return subprocess.CompletedProcess(exc.cmd, 0, exc.stdout or "", exc.stderr or "")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, subprocess.CompletedProcess]]:
    """Run every case at once (two at a time); return case -> (its working folder, its result)."""
    tmp = tmp_path_factory.mktemp("errors")

    def go(case: str) -> tuple[Path, subprocess.CompletedProcess]:
        name, args, _ = CASES[case]
        work = tmp / case.replace(" ", "-")
        return work, _command(work, name, args)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(CASES, pool.map(go, CASES), strict=True))


@pytest.mark.parametrize("case", list(CASES))
def test_a_misspelt_name_is_one_short_line_naming_the_closest(runs, case):
    work, r = runs[case]
    name, _, words = CASES[case]
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"escoba-{name}: error: ") and words in lines[0], lines[0]
    assert len(lines[0]) <= 200 and "..." not in lines[0]  # the closest names, not a cut listing
    assert r.stdout == "" and list(work.iterdir()) == []  # nothing written


def test_a_gymnasium_opponent_misspelt_names_the_closest():
    from escoba_env import Rules
    from escoba_env.faces.opponent_specs import make_opponent

    with pytest.raises(ValueError) as err:
        make_opponent("exprt", Rules())
    assert "unknown opponent 'exprt'; did you mean expert?" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"did you mean sims\?"):
        make_opponent("search:simz=3", Rules())
