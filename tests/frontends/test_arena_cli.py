"""The arena's command line: bad input is one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from escoba_arena.web.cli import main
from tests.frontends.arena_support import ROOT

pytest.importorskip("uvicorn")


@pytest.mark.parametrize("argv, text", [
    (["--port", "x"], "--port: must be a port number 0-65535, got 'x'"),
    (["--port", "70000"], "--port: must be a port number 0-65535, got '70000'"),
    (["--bot-timeout", "0"], "--bot-timeout: must be in (0, 3600] seconds"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_bad_arguments_are_one_line_and_status_2(argv, text, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and text in err
    assert err.startswith("escoba-arena: error:")


def test_a_missing_data_directory_is_refused(tmp_path, capsys):
    assert main(["--data", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a directory" in err


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7"])
def test_a_reachable_address_needs_public(host, capsys):
    assert main(["--host", host, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err == (f"escoba-arena: error: --host {host} can be reached from other machines; add --public "
                   "to serve the arena to them (see --help)\n")


def test_help_states_the_bot_time_budget_and_the_exposure_flags(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "the time budget of one bot move" in out and "(default 10)" in out
    assert "--public" in out and "--allowed-host NAME" in out and "--allow-agent SPEC" in out


def test_a_busy_port_is_one_line_and_status_1(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in err


def test_module_entry_point_has_help():
    out = subprocess.run([sys.executable, "-m", "escoba_arena.web", "--help"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and "--port" in out.stdout and "127.0.0.1" in out.stdout


def test_the_web_package_never_reaches_into_escoba_env():
    # escoba_env must not import escoba_arena (nor agents).
    code = ("import sys, escoba_env, escoba_env.faces.escoba_v0; "
            "print(any(m.split('.')[0] in ('escoba_arena', 'agents') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("sig, status, text", [(signal.SIGTERM, 143, "stopped (SIGTERM)"),
                                                (signal.SIGINT, 130, "stopped (Ctrl-C)")])
def test_a_signal_stops_the_server_with_one_line(sig, status, text):
    proc = subprocess.Popen([sys.executable, "-m", "escoba_arena.web", "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        url = proc.stdout.readline().split()[2]
        for _ in range(100):  # wait until it answers, then stop it
            try:
                urllib.request.urlopen(url + "api/info", timeout=5).close()
                break
            except OSError:
                time.sleep(0.1)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == status and err == f"escoba-arena: {text}\n"
