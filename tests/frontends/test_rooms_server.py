"""The rooms in a real server process: the documented study command, WebSocket frame bounds, --help."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from tests.frontends.arena_support import ROOT  # noqa: E402
from tests.frontends.rooms_support import Server  # noqa: E402

MiB = 2**20


def test_the_documented_study_command_works_in_an_empty_folder(tmp_path):
    """``escoba-arena --rooms-dir study/ --data study/`` used to fail: --data was checked before the rooms
    folder was made."""
    import httpx

    server = Server(["--rooms-dir", "study/", "--data", "study/"], tmp_path)
    try:
        assert server.out[0].startswith("Rooms: journal and records in "), server.out
        r = httpx.post(server.url + "/api/rooms", json={"rules": {"num_players": 3}, "record": True,
                                                        "seats": ["human:alice", "human", "greedy"]})
        assert r.status_code == 201, r.text
        assert (tmp_path / "study" / "records").is_dir() and (tmp_path / "study" / "rooms.journal").is_file()
    finally:
        server.stop()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's memory from /proc")
def test_ten_connections_sending_8_mib_frames_do_not_grow_the_server_by_40_mib(tmp_path):
    """Frames past the message limit are refused from their header, before they are read.

    20 connections sending 15 MiB before hello used to take the server from 282 to 585 MiB.
    """
    pytest.importorskip("websockets")
    from websockets.sync.client import connect

    server = Server([], tmp_path)
    try:
        before = server.memory("VmRSS")
        codes: list = []

        def flood():
            try:
                with connect(server.url.replace("http", "ws") + "/api/rooms/ws", open_timeout=10,
                             close_timeout=2, max_size=None) as ws:
                    ws.send("x" * (8 * MiB))
                    ws.recv(timeout=10)
            except Exception as exc:  # the server closes the connection: that is the point
                codes.append(getattr(getattr(exc, "rcvd", None), "code", type(exc).__name__))

        threads = [threading.Thread(target=flood, daemon=True) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads), "waited 30 s for the server to close 10 connections"
        growth = server.memory("VmHWM") - before
        assert growth < 40 * MiB, f"the server grew by {growth / MiB:.0f} MiB"
        assert codes.count(1009) >= 1, codes  # "message too big", said by the server
    finally:
        server.stop()


def test_help_states_the_connection_caps_and_the_frame_limit():
    from escoba_arena.web.cli import build_parser

    text = " ".join(build_parser().format_help().split())
    for words in ("--max-connections N", "--connections-per-link N", "4096 bytes", "--rooms-per-client N",
                  "--waiting-per-client N", "--trusted-proxy ADDRESS", "--serve-records",
                  "--room-unjoined-seconds", "--connections-per-client N", "--pending-per-client N",
                  "--rooms-per-minute N", "--bot-workers N", "--message-rate N"):
        assert words in text, words


def _bench(*args: str) -> list[str]:
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_arena.py"), *args], cwd=ROOT,
                         text=True, capture_output=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.splitlines()


@pytest.mark.slow
def test_the_rooms_benchmark_opens_more_rooms_than_one_clients_quota():
    """Every simulated person of ``bench_arena.py --rooms`` shares one address: it lifts the quotas."""
    lines = _bench("--rooms", "12", "--seconds", "3", "--think", "0.05", "--room-target", "2")
    assert lines[1].startswith("12 rooms x 4 people") and int(lines[1].split(": ")[1].split()[0]) >= 10


def test_the_broadcast_benchmark_times_the_servers_work_per_move():
    lines = _bench("--broadcast-games", "1", "--room-target", "2")
    assert lines[1].startswith("1 games of 4 people in one process (no network): ")
    assert " ms per move from its message to the 4 state messages sent" in lines[1]


@pytest.mark.slow
def test_the_rooms_benchmark_measures_under_attack():
    """``--attack``: silent spectators and an orphan client in a process of their own, a takeover probe,
    the server's threads and processes; each line says what it counted."""
    lines = _bench("--rooms", "2", "--seconds", "10", "--think", "0.05", "--room-target", "2", "--attack",
                   "--silent-spectators", "4", "--orphans", "1", "--bot-timeout", "1",
                   "--takeover-seconds", "1", "--probe-every", "100")
    text = "\n".join(lines)
    assert "attack: 4 silent spectators" in text and "1 orphan clients" in text, text
    assert "takeover: 1 probes, person away 1 s: seat taken after" in text, text
    assert "server under attack: at most" in text, text
