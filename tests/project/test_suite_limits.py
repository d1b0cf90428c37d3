"""The suite survives a loaded machine: a test that runs past the per-test limit fails alone, with its
name, and the session goes on to its summary; no test waits on its own for longer than that limit."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pytest_options() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]


def test_a_test_past_the_limit_fails_alone_and_the_session_reports():
    options = _pytest_options()
    assert options["timeout_method"] == "signal" and options["timeout"] > 0
    return_code, out = _run_pytest_on(
        "import time\n\n\n"
        "def test_stuck():\n    time.sleep(60)\n\n\n"
        "def test_after_it():\n    assert True\n")
    assert return_code == 1, out
    assert "FAILED test_two.py::test_stuck" in out and "Timeout" in out
    assert "1 failed, 1 passed" in out  # the session went on and printed its summary


def _run_pytest_on(source: str) -> tuple[int, str]:
    """Run pytest with this project's settings (the per-test limit shortened to 3 s) on one test file
    written from ``source``; return its exit status and output."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "test_two.py").write_text(source)
        args = ["-c", str(ROOT / "pyproject.toml"), "--rootdir", tmp, "-p", "no:cacheprovider",
                "--timeout", "3", "test_two.py"]
        done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=tmp, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": ""})
    return done.returncode, done.stdout + done.stderr


def _waits(tree: ast.AST) -> list[tuple[int, float]]:
    """Return (line, seconds) of every literal wait in a test module: ``timeout=N`` arguments and
    ``time.monotonic() + N`` deadlines."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            # Playwright's waits (page.wait_for_selector(..., timeout=10_000)) count milliseconds.
            scale = 1000.0 if getattr(node.func, "attr", "").startswith("wait_for") else 1.0
            found += [(k.value.lineno, float(k.value.value) / scale) for k in node.keywords
                      if k.arg in ("timeout", "timeout_s") and isinstance(k.value, ast.Constant)
                      and isinstance(k.value.value, (int, float))]
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Call)
              and getattr(node.left.func, "attr", "") in ("monotonic", "time")
              and isinstance(node.right, ast.Constant) and isinstance(node.right.value, (int, float))):
            found.append((node.lineno, float(node.right.value)))
    return found


def test_the_wait_scan_finds_timeouts_and_deadlines():
    src = ("subprocess.run(cmd, timeout=900)\nproc.communicate(timeout=5)\n"
           "deadline = time.monotonic() + 120\nx = f(timeout=None)\n"
           "page.wait_for_selector('#x', timeout=700_000)\n")
    assert sorted(s for _, s in _waits(ast.parse(src))) == [5.0, 120.0, 700.0, 900.0]


def test_no_test_waits_longer_than_the_per_test_limit():
    limit = _pytest_options()["timeout"]
    files = sorted((ROOT / "tests").rglob("*.py"))
    assert len(files) > 50
    over = {str(p.relative_to(ROOT)): [(line, s) for line, s in _waits(ast.parse(p.read_text())) if s > limit]
            for p in files}
    assert {k: v for k, v in over.items() if v} == {}
