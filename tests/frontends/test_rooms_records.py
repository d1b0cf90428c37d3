"""Rooms' records and journal: duplicate deals, the report, a restart, a corrupt journal, SIGKILL."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("starlette")

from agents.tournament.replay import check_replay  # noqa: E402
from escoba_arena.web.cli import main as arena_main  # noqa: E402
from escoba_arena.web.files import load_results  # noqa: E402
from tests.frontends.arena_support import ROOT, client  # noqa: E402
from tests.frontends.rooms_support import (  # noqa: E402
    Person,
    play_people,
    receive_json,
    rooms_client,
    tokens_of,
    wait_people,
)

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
DEALS = [{"seed": 5, "game_id": 0}, {"seed": 5, "game_id": 1}]
RULES = {"target_score": 6}


def _open(tc, **body) -> dict:
    r = tc.post("/api/rooms", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def test_duplicate_rooms_play_fixed_deals_from_both_seats_and_the_report_pairs_them(tmp_path, capsys):
    with rooms_client(tmp_path) as tc:
        key = tc.app.state.rooms.rooms.key
        ana = {"kind": "human", "name": "ana"}
        for seats in ([ana, "greedy"], ["greedy", ana]):  # every deal from both seats
            ans = _open(tc, rules=RULES, seats=seats, deals=DEALS, record=True)
            assert ans["room"]["games"] == 2 and ans["room"]["fixed_deals"]
            people = play_people(tc, tokens_of(ans))
            assert [r["game"] for r in people[0].last["room"]["results"]] == [1, 2]
    files = sorted((tmp_path / "records").glob("*.jsonl"))
    recs = [json.loads(f.read_text()) for f in files]
    assert len(recs) == 4 and all(check_replay(r) for r in recs)
    # Each record names the engine's seed of its deal: the server's key of (5, game id), paired by the report.
    assert sorted((r["seed"], r["game_id"]) for r in recs) == sorted(2 * [key.engine_deal((5, 0)),
                                                                          key.engine_deal((5, 1))])
    # The same deal deals the same cards whoever sits where.
    by_deal = {}
    for r in recs:
        by_deal.setdefault(r["game_id"], []).append(r["rounds"][0]["deck"])
    assert all(a == b for a, b in by_deal.values())
    out = tmp_path / "study"
    assert arena_main(["report", str(tmp_path / "records"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("4 recorded games, 2 distinct deals (repeated deals paired)")
    assert "greedy" in text and "human:ana" in text and "OpenSkill" in text
    res = load_results(out.with_suffix(".json"))
    (pair,) = res["pairs"]
    assert (pair["a"], pair["b"], pair["deals"], pair["games"]) == ("greedy", "human:ana", 2, 4)
    want = sum(sum(rnd["points"][r["seats"].index("greedy")] - rnd["points"][r["seats"].index("human:ana")]
                   for rnd in r["rounds"]) for r in recs) / sum(len(r["rounds"]) for r in recs)
    assert pair["diff"]["mean"] == pytest.approx(want)
    assert {x["agent"] for x in res["ratings"]} == {"greedy", "human:ana"}
    assert res["source"] == {"kind": "replay records", "records": 4, "deals": 2, "takeovers": 0}
    # The Results page reads it like an evaluate.py run.
    with client([tmp_path]) as c:
        r = c.get("/api/results", params={"file": "0/study.json"})
        assert r.status_code == 200 and r.json()["results"]["pairs"][0]["games"] == 4
    # The report never overwrites a file.
    assert arena_main(["report", str(tmp_path / "records"), "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err


def test_report_refuses_bad_input_with_one_line(tmp_path, capsys):
    assert arena_main(["report", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    (tmp_path / "bad.jsonl").write_text('{"format": "escoba-replay/1", "seed": 1}\n')
    assert arena_main(["report", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.jsonl:1" in err


def test_rooms_without_recording_leave_no_file(tmp_path):
    with rooms_client(tmp_path) as tc:
        ans = _open(tc, rules=RULES, seats=["human", "greedy"], seed=9)
        assert "does not record" in ans["room"]["record_note"]
        play_people(tc, tokens_of(ans))
    assert list((tmp_path / "records").glob("*")) == []


def _stop_midway(tc, ans, moves):
    people = [Person(tc, t, seed=i, stop_after=moves, until="never") for i, t in enumerate(tokens_of(ans))]
    for p in people:
        p.start()
    wait_people(tc, people, 30, f"each person to make {moves} moves")
    return people


def test_a_restarted_server_reads_its_journal_back_and_the_tokens_still_work(tmp_path):
    with rooms_client(tmp_path) as tc:
        key = tc.app.state.rooms.rooms.key
        ans = _open(tc, rules=RULES, seats=["human", "human"], seed=31,
                    record=True)
        _stop_midway(tc, ans, 4)
        # Each person left after their 4th move; the server may still be playing the last one.
        room = tc.app.state.rooms.rooms.rooms[ans["room"]["id"]]
        deadline = time.monotonic() + 10
        while room.game.moves_played < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        seen = room.game.view_for(0)
    assert seen["moves_played"] == 8, "waited 10 s for the server to play the people's 8 moves"
    with rooms_client(tmp_path) as tc:
        assert tc.app.state.rooms.loaded == 1
        people = play_people(tc, tokens_of(ans))
        # Whoever came back first found the game where it was.
        first = min(([m for m in p.messages if m["type"] == "state"][0]["view"] for p in people),
                    key=lambda v: v["moves_played"])
        assert first["hand"] and first["moves_played"] == 8 and first["scores"] == seen["scores"]
        assert first["table"] == seen["table"]
        assert people[0].last["room"]["status"] == "over"
    (rec,) = [json.loads(f.read_text()) for f in (tmp_path / "records").glob("*.jsonl")]
    assert check_replay(rec) > 8 and rec["seed"] == key.engine_seed(31, 0)


def test_a_corrupt_or_cut_journal_entry_is_one_line_and_skipped(tmp_path, capsys):
    with rooms_client(tmp_path) as tc:
        a = _open(tc, rules=RULES, seats=["human", "greedy"], seed=1)
        b = _open(tc, rules=RULES, seats=["human", "greedy"], seed=2)
    journal = tmp_path / "rooms.journal"
    lines = journal.read_text().splitlines(keepends=True)
    assert len(lines) == 2
    bad = lines[0][:12] + ("X" if lines[0][12] != "X" else "Y") + lines[0][13:]
    journal.write_text(bad + lines[1] + lines[1][: len(lines[1]) // 2])
    capsys.readouterr()
    with rooms_client(tmp_path) as tc:
        assert tc.app.state.rooms.loaded == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 2 and all("line" in e and "damaged" in e for e in err), err
        with tc.websocket_connect("/api/rooms/ws") as ws:
            ws.send_json({"type": "hello", "token": tokens_of(b)[0]})
            assert receive_json(tc, ws, "the answer to hello")["type"] == "state"
        with tc.websocket_connect("/api/rooms/ws") as ws:
            ws.send_json({"type": "hello", "token": tokens_of(a)[0]})
            e = receive_json(tc, ws, "the answer to hello")
            assert e["status"] == 410 and "lost" in e["message"], e
        # New entries go on a line of their own after the cut one.
        _open(tc, rules=RULES, seats=["human", "greedy"], seed=3)
    with rooms_client(tmp_path) as tc:
        assert tc.app.state.rooms.loaded == 2


@pytest.mark.slow
def test_sigkill_mid_game_then_restart_and_finish(tmp_path):
    """A real server process killed with SIGKILL mid-game; restarted on its rooms folder, the game ends."""
    pytest.importorskip("websockets")
    import httpx
    from websockets.sync.client import connect

    def start():
        proc = subprocess.Popen([sys.executable, "-m", "escoba_arena.web", "--port", "0", "--rooms-dir",
                                 str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        line = proc.stdout.readline()
        assert line.startswith("Rooms: journal and records in "), line + proc.stderr.read()
        line = proc.stdout.readline()
        assert line.startswith("Escoba arena: http://"), line + proc.stderr.read()
        url = line.split()[2].rstrip("/")
        for _ in range(200):  # the line comes just before the server listens
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/api/info", timeout=5).status_code == 200:
                    break
            time.sleep(0.05)
        return proc, url

    def play(url, tokens, stop_after=None):
        """Play the people's moves (first legal option) over real WebSockets; return (state, moves)."""
        stack = contextlib.ExitStack()
        wss = [stack.enter_context(connect(url.replace("http", "ws") + "/api/rooms/ws")) for _ in tokens]
        for ws, t in zip(wss, tokens, strict=True):
            ws.send(json.dumps({"type": "hello", "token": t}))
        moves, sent, last = 0, -1, [None] * len(wss)
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                for i, ws in enumerate(wss):
                    with contextlib.suppress(TimeoutError):
                        while True:
                            m = json.loads(ws.recv(timeout=0.02))
                            if m["type"] == "state":
                                last[i] = m
                now = max((m for m in last if m and m["view"]), default=None,
                          key=lambda m: m["view"]["moves_played"])
                if now is None:
                    continue
                if now["room"]["status"] == "over" or (stop_after is not None and moves >= stop_after):
                    return now, moves
                view = next((m["view"] for m in last if m and m["view"] and m["view"]["your_turn"]
                             and m["view"]["moves_played"] == now["view"]["moves_played"]), None)
                if view is not None and view["moves_played"] > sent:
                    sent = view["moves_played"]
                    mv = view["moves"][0]
                    wss[view["seat"]].send(json.dumps({"type": "move", "card": mv["card"],
                                                       "capture": mv["options"][0]}))
                    moves += 1
            raise AssertionError("the game did not end in 60 s")
        finally:
            stack.close()

    proc, url = start()
    try:
        r = httpx.post(url + "/api/rooms", json={"rules": RULES, "seats": ["human", "human"], "seed": 77,
                                                 "record": True})
        assert r.status_code == 201, r.text
        tokens = tokens_of(r.json())
        state, n = play(url, tokens, stop_after=6)
        assert n == 6 and state["room"]["status"] == "playing"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    proc, url = start()
    try:
        state, n = play(url, tokens)
        assert state["room"]["status"] == "over" and state["view"]["moves_played"] >= 6 + n - 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    (rec,) = [json.loads(f.read_text()) for f in (tmp_path / "records").glob("*.jsonl")]
    assert check_replay(rec) >= state["view"]["moves_played"] > 6
