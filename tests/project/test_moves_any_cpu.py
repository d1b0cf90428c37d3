"""The pinned moves hold under other instruction sets and thread counts, forced in fresh processes.

``scripts/check_move_digests.sh --quick`` runs the networks' digest tests of ``test_pinned_digests.py``
(their moves, their inputs, the move features) three times: as installed, as on an AVX2 machine with
one thread (NumPy without its AVX-512 targets, ATen's AVX2 kernels, MKL's AVX2 code, OpenBLAS's
Haswell kernels), and with no SIMD beyond SSE4.2 on three threads. Before the networks decided in
fixed point, the move networks' digests pinned on a machine without AVX-512 failed on one with it
(``agents.nets.fixedpoint``). The script without ``--quick`` runs twelve settings one at a time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64", reason="x86-64 settings")
def test_the_pinned_moves_hold_under_forced_cpu_settings():
    script = ROOT / "scripts" / "check_move_digests.sh"
    r = subprocess.run(["bash", str(script), "--quick"], cwd=ROOT, text=True, capture_output=True,
                       timeout=580, env={**os.environ, "PYTHON": sys.executable})
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    summary = r.stdout.split("== summary")[1].split()
    assert summary.count("ok") == 3 and "FAILED" not in summary, r.stdout[-4000:]
    assert "dispatches to ['X86_V3']" in r.stdout or "X86_V3" not in r.stdout  # the setting took effect
