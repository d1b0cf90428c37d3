"""The documented shell blocks copy-paste in order on a fresh clone.

A ``bash`` block of README or a docs page is *runnable* when the line before its fence is the HTML
comment ``<!-- runnable -->`` (invisible on GitHub and on the site). The test copies the checkout's
tracked files into a fresh folder and runs every runnable block there with bash, one after another in
reading order (README, then the pages in the site's order), as a newcomer pasting them would: a block
may read what an earlier one wrote, so two blocks that write the same ``--out`` fail here.

Sizes: a marker may list substitutions that the test applies to its block, ``<!-- runnable: --rounds
100 => --rounds 6; --seconds 300 => --steps 4096 -->``, so a block that takes CPU-minutes runs in
seconds here while the page shows the real command.

Installation: ``pip`` is a stand-in first on PATH that records its arguments and installs nothing
(the suite runs in an installed environment; the order of the install lines is what is checked: the
CPU build of torch, pinned, before the project's install). No block may leave a process behind.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.helpers import tagged_pids

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^<!-- runnable(?::(?P<subs>[^\n]*?))? -->\n```bash\n(?P<body>.*?)^```", re.M | re.S)
BLOCK_S = 600
"""Seconds after which a block is a hang (each takes seconds to a minute at the reduced sizes)."""


def pages() -> list[Path]:
    """Return README and the docs pages in reading order (the site's navigation)."""
    nav = re.findall(r":\s*([\w/]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    return [ROOT / "README.md", *(ROOT / "docs" / p for p in nav)]


def runnable_blocks(text: str) -> list[str]:
    """Return the runnable blocks of a page, each with its marker's substitutions applied."""
    markers = len(re.findall(r"^<!-- runnable", text, re.M))
    assert markers == len(FENCE.findall(text)), "a runnable marker must be the line before a ```bash fence"
    out = []
    for m in FENCE.finditer(text):
        body = m.group("body")
        for sub in filter(None, (s.strip() for s in (m.group("subs") or "").split(";"))):
            old, sep, new = (x.strip() for x in sub.partition("=>"))
            assert sep and old in body, f"substitution {sub!r} does not apply to:\n{body}"
            body = body.replace(old, new)
        out.append(body)
    return out


def test_the_marker_reader_applies_substitutions_and_skips_other_blocks():
    text = ("```bash\nnot this\n```\n<!-- runnable: --rounds 100 => --rounds 2; a => b -->\n```bash\n"
            "run a --rounds 100\n```\n<!-- runnable -->\n```bash\nsecond\n```\n")
    assert runnable_blocks(text) == ["run b --rounds 2\n", "second\n"]
    with pytest.raises(AssertionError, match="does not apply"):
        runnable_blocks("<!-- runnable: --nope 1 => --nope 2 -->\n```bash\nx\n```\n")
    with pytest.raises(AssertionError, match="the line before"):
        runnable_blocks("<!-- runnable -->\n\n```bash\nx\n```\n")


def fresh_clone(dest: Path) -> None:
    """Copy the checkout's tracked files (as they are in the working tree) into ``dest``."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


@pytest.mark.slow
def test_every_runnable_block_runs_in_order_on_a_fresh_clone(tmp_path):
    blocks = [(page.relative_to(ROOT), b) for page in pages() for b in runnable_blocks(page.read_text())]
    names = {str(p) for p, _ in blocks}
    assert {"README.md", "docs/tournaments.md", "docs/llm.md", "docs/training.md"} <= names, names
    clone, shim = tmp_path / "clone", tmp_path / "shim"
    clone.mkdir()
    shim.mkdir()
    fresh_clone(clone)
    pip_log = tmp_path / "pip.log"
    (shim / "pip").write_text(f'#!/bin/sh\necho "$*" >> "{pip_log}"\n')
    (shim / "pip").chmod(0o755)
    tag = uuid.uuid4().hex
    env = {**os.environ, "PATH": os.pathsep.join([str(shim), os.path.dirname(sys.executable),
                                                   os.environ.get("PATH", "")]),
           "PYTHONPATH": str(clone), "MPLBACKEND": "Agg", "ESCOBA_TEST_BLOCK": tag}
    for page, block in blocks:
        try:
            r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=clone, env=env, text=True,
                               capture_output=True, timeout=BLOCK_S, start_new_session=True)
        finally:
            left = tagged_pids("ESCOBA_TEST_BLOCK", tag)
            for pid in left:
                os.kill(pid, 9)
        assert r.returncode == 0, f"{page}:\n{block}\nstdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-3000:]}"
        assert left == [], f"{page}: the block left processes {left} behind:\n{block}"
    installs = pip_log.read_text().splitlines()
    cpu_torch = [i for i, line in enumerate(installs)
                 if "torch==" in line and "--index-url https://download.pytorch.org/whl/cpu" in line]
    needs_torch = [i for i, line in enumerate(installs) if re.search(r"\[[\w,]*(all|agents|train|dev)", line)]
    assert needs_torch and cpu_torch and cpu_torch[0] < needs_torch[0], installs  # pinned CPU torch first
