"""The mutation-testing set-up (``scripts/mutation.sh``, ``[tool.mutmut]``, ``tests/mutation_plugin.py``)
stays runnable: its configuration names files that exist, bad usage is one line, and programs that tests
start stay on the unmutated code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mutation.sh"


def test_the_mutmut_section_names_the_packages_and_files_that_exist():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    section = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert section["source_paths"] == ["escoba_env", "agents", "escoba_arena"]
    missing = [p for p in section["also_copy"] if not (ROOT / p).exists()]
    assert not missing, f"[tool.mutmut] also_copy names paths that do not exist: {missing}"
    args = section["pytest_add_cli_args"]
    assert args[args.index("-m") + 1] == "not slow"
    assert args[args.index("tests.mutation_plugin") - 1] == "-p"
    assert "only_mutate" not in section  # the script adds the module of each run


@pytest.mark.parametrize("args", [[], ["escoba_env/faces/text.py"], ["no_such_module.py", "tests/llm"],
                                  ["README.md", "tests/llm"]])
def test_the_script_answers_bad_usage_in_one_line(args):
    r = subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "usage" in r.stderr


def test_the_script_names_a_missing_test_folder_in_one_line():
    pytest.importorskip("mutmut")
    r = subprocess.run(["bash", str(SCRIPT), "escoba_env/faces/text.py", "tests/no_such_folder"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == "mutation.sh: no test path tests/no_such_folder"


def test_the_plugin_starts_children_without_the_mutant_switch():
    """Loaded in a process that has ``MUTANT_UNDER_TEST``, the plugin leaves it out of a child's
    environment (given or inherited) and keeps the rest."""
    code = ("import os, subprocess, sys\nimport tests.mutation_plugin\n"
            "show = [sys.executable, '-c', 'import os; print(os.environ.get(\"MUTANT_UNDER_TEST\"), "
            "os.environ.get(\"KEEP\"))']\n"
            "for env in (None, dict(os.environ)):\n"
            "    print(subprocess.run(show, env=env, capture_output=True, text=True).stdout.strip())\n")
    env = {**os.environ, "MUTANT_UNDER_TEST": "escoba_env.faces.text.x_f__mutmut_1", "KEEP": "yes"}
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["None yes", "None yes"]


def test_mutants_restricts_the_run_to_the_names_given_unexpanded(tmp_path):
    """``MUTANTS`` reaches ``mutmut run`` as its patterns, one argument each and never expanded by the
    shell (a ``*`` that matches files in the copy stays a pattern); without it mutmut runs every mutant."""
    stub = tmp_path / "bin" / "mutmut"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\n[ "$1" = run ] && printf "%s\\n" "$@" >>{tmp_path}/args\nexit 0\n')
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stub.parent}{os.pathsep}{os.environ['PATH']}"}
    for i, only in enumerate(["", "agents.external.llm.xǁLLMAgentǁ_vote* *.py  tests*"]):
        r = subprocess.run(["bash", str(SCRIPT), "escoba_env/faces/text.py", "tests/llm"], cwd=ROOT,
                           env={**env, "MUTANTS": only, "WORK": str(tmp_path / f"work{i}")},
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    runs = (tmp_path / "args").read_text().split("run\n")[1:]
    assert [a.splitlines() for a in runs] == [
        ["--max-children", "2"],
        ["--max-children", "2", "agents.external.llm.xǁLLMAgentǁ_vote*", "*.py", "tests*"]]


def test_a_process_forked_after_the_plugin_starts_its_own_fork_server_and_bot_pool():
    """mutmut runs each mutant in a process forked from one that has run the tests: the fork server and
    the shared bot pool started there must not be taken for the child's own (the server's next start
    fails, the pool's threads are gone), or no bot ever moves and every room test times out."""
    code = ("import multiprocessing, os, sys\nimport tests.mutation_plugin\n"
            "from escoba_arena.web.bot_pool import shared_pool\n"
            "ctx = multiprocessing.get_context('forkserver')\n"
            "def start():\n"
            "    p = ctx.Process(target=sys.exit, args=(7,))\n"
            "    p.start()\n"
            "    p.join()\n"
            "    return p.exitcode\n"
            "if __name__ == '__main__':\n"
            "    pool = shared_pool()\n"
            "    print(start(), flush=True)\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        try:\n"
            "            print(start(), shared_pool() is not pool, flush=True)\n"
            "        except BaseException as exc:\n"
            "            print(type(exc).__name__, flush=True)\n"
            "        os._exit(0)\n"
            "    os.waitpid(pid, 0)\n"
            "    print(start(), shared_pool() is pool, flush=True)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["7", "7", "True", "7", "True"], r.stdout + r.stderr
