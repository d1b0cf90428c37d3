"""The attacks ``bench_arena.py --rooms N --attack`` runs while it measures the victims' rooms.

The spectators and the orphan clients run in a process of their own (``attacker``); the takeover
probes and the sampling of the server run beside the victims.

- **Silent spectators.** ``--silent-spectators K`` sockets on the spectator links of rooms the
  attacker opened (4 a link, the most a link may hold), each with a 2 KiB receive buffer, that say
  hello and never read; a seat of each of those rooms joins and leaves without pause, so that every
  one of their rooms' changes is a message to the silent sockets.
- **Orphan bots.** ``--orphans M`` clients, each from an address of its own (the server trusts the
  benchmark as its proxy and reads ``X-Forwarded-For``), ask for a game against the costliest spec
  a request may name (``HEAVY``) again and again: each game's bot runs to the ``--bot-timeout``.
- **Takeover probes.** Every ``--probe-every`` seconds a room of two people opens; one stays, the
  other leaves, and the time until the one who stayed is shown the bot in the seat is noted: on
  time is ``--takeover-seconds`` plus at most the server's one-second check.
- **The server's share.** Its threads, its bot workers (its descendant processes) and their CPU
  time are sampled every half second from ``/proc``.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import os
import socket
import threading
import time
from pathlib import Path

HEAVY = "search:sims=2000,policy=search:sims=2000"
"""The costliest agent spec a request may name (the registry's bounds): one move takes minutes."""


def _post(port: int, path: str, body: dict, address: str | None = None, timeout: float = 120) -> dict:
    """Return the JSON answer of a POST to the arena (``address``: what the trusted proxy forwards)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if address is not None:
        headers["X-Forwarded-For"] = address
    try:
        conn.request("POST", path, body=json.dumps(body), headers=headers)
        res = conn.getresponse()
        raw = res.read()
    finally:
        conn.close()
    if not 200 <= res.status < 300:
        raise RuntimeError(f"POST {path}: {res.status} {raw[:200]!r}")
    return json.loads(raw)


def _token(link: str) -> str:
    return link.split("#t=", 1)[1]


def silent_socket(port: int, token: str, rcvbuf: int = 2048) -> socket.socket:
    """Return a WebSocket that says hello with ``token`` and never reads (``rcvbuf`` bytes of buffer)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /api/rooms/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
               ).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        got = s.recv(1)
        if not got:
            raise RuntimeError("the server closed a spectator's handshake")
        head += got
    data = json.dumps({"type": "hello", "token": token}).encode()
    mask = os.urandom(4)
    s.sendall(bytes([0x81, 0x80 | len(data)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
    return s


async def _churn(port: int, token: str, address: str, deadline: float, counts: dict) -> None:
    """Join and leave one seat link without pause until ``deadline`` (each is a change of its room)."""
    from websockets.asyncio.client import connect

    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        try:
            async with connect(f"ws://127.0.0.1:{port}/api/rooms/ws", open_timeout=5,
                               additional_headers={"X-Forwarded-For": address}) as ws:
                await ws.send(json.dumps({"type": "hello", "token": token}))
                await asyncio.wait_for(ws.recv(), 5)
            counts["churn"] += 1
        except Exception:  # refused or closed: the attacker tries again
            counts["churn_failed"] += 1
            await asyncio.sleep(0.05)


async def spectators(port: int, count: int, deadline: float, counts: dict, held: list) -> None:
    """Open the attacker's rooms, put ``count`` silent spectators on them and churn their seats."""
    loop = asyncio.get_running_loop()
    churns = []
    for k in range((count + 3) // 4):
        address = f"10.8.0.{k + 1}"
        ans = await loop.run_in_executor(None, _post, port, "/api/rooms", {"seats": ["human", "human"]},
                                         address)
        for _ in range(min(4, count - 4 * k)):
            held.append(await loop.run_in_executor(None, silent_socket, port, _token(ans["watch"])))
        churns.append(_churn(port, _token(ans["links"][0]["link"]), address, deadline, counts))
    counts["spectators"] = len(held)
    await asyncio.gather(*churns)


def orphans(port: int, count: int, stop: threading.Event, counts: dict, lock: threading.Lock) -> list:
    """Start ``count`` threads asking for games against ``HEAVY``, each from its own address."""

    def attack(k: int) -> None:
        seed = 0
        while not stop.is_set():
            seed += 1
            try:
                ans = _post(port, "/api/games", {"opponents": [HEAVY], "seat": 1, "seed": seed},
                            f"10.9.0.{k}")
                view = ans["view"]
                if not view["done"] and view["moves"]:
                    m = view["moves"][0]
                    view = _post(port, f"/api/games/{ans['id']}/move",
                                 {"card": m["card"], "capture": m["options"][0]}, f"10.9.0.{k}")["view"]
                with lock:
                    counts["orphan_games"] += 1
                    counts["orphan_timeouts"] += "took longer" in (view.get("error") or "")
            except (OSError, RuntimeError, ValueError):
                with lock:
                    counts["orphan_refused"] += 1
                time.sleep(0.5)

    threads = [threading.Thread(target=attack, args=(k + 1,), daemon=True) for k in range(count)]
    for t in threads:
        t.start()
    return threads


async def takeover_probe(port: int, away: float, delays: list) -> None:
    """Open a room of two people; one leaves; append how long until the other is shown the bot."""
    from websockets.asyncio.client import connect

    loop = asyncio.get_running_loop()
    ans = await loop.run_in_executor(None, _post, port, "/api/rooms", {"seats": ["human", "human"]})
    stays, goes = (_token(x["link"]) for x in ans["links"])
    url = f"ws://127.0.0.1:{port}/api/rooms/ws"
    async with connect(url, max_size=2**22) as a:
        await a.send(json.dumps({"type": "hello", "token": stays}))
        async with connect(url, max_size=2**22) as b:
            await b.send(json.dumps({"type": "hello", "token": goes}))
            await asyncio.wait_for(b.recv(), 30)
        left = loop.time()
        end = left + away + 60
        while loop.time() < end:
            try:
                m = json.loads(await asyncio.wait_for(a.recv(), max(0.1, end - loop.time())))
            except asyncio.TimeoutError:
                break
            if m.get("type") == "state" and m["room"]["seats"][1]["replaced"]:
                delays.append(loop.time() - left)
                return
    delays.append(float("inf"))


async def probes(port: int, away: float, every: float, deadline: float, delays: list) -> None:
    """Run a takeover probe every ``every`` seconds until ``deadline``."""
    loop = asyncio.get_running_loop()
    tasks = []
    while loop.time() + away + 2 < deadline:
        tasks.append(asyncio.create_task(takeover_probe(port, away, delays)))
        await asyncio.sleep(min(every, max(0.0, deadline - loop.time())))
    await asyncio.gather(*tasks)


def descendants(pid: int) -> list[int]:
    """Return every process below ``pid`` (from Linux's /proc/PID/task/*/children; none without them)."""
    out, todo = [], [pid]
    while todo:
        for f in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            try:
                kids = [int(x) for x in f.read_text().split()]
            except (OSError, ValueError):
                continue
            out += kids
            todo += kids
    return out


def cpu_seconds(pid: int) -> float:
    """Return the CPU time (user + system) process ``pid`` has used, 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sample(pid: int, stop: threading.Event, out: dict) -> None:
    """Note the server's threads, its bot processes and their CPU every half second until ``stop``."""
    seen: dict[int, float] = {}
    start = cpu_seconds(pid)
    while not stop.wait(0.5):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        threads = int(next(x.split()[1] for x in status.splitlines() if x.startswith("Threads:")))
        kids = descendants(pid)
        for k in kids:
            seen[k] = max(seen.get(k, 0.0), cpu_seconds(k))
        out["threads"] = max(out.get("threads", 0), threads)
        out["processes"] = max(out.get("processes", 0), len(kids))
        out["server_cpu"] = cpu_seconds(pid) - start
        out["bot_cpu"] = sum(seen.values())


def attacker(port: int, silent: int, count: int, seconds: float, server: int, out) -> None:
    """Run the silent spectators and the orphan clients for ``seconds``, and sample the server (pid
    ``server``), in a process of their own so that none of it delays the victims' clients; put the
    counts and the server's usage on ``out``."""
    counts = dict.fromkeys(("churn", "churn_failed", "orphan_games", "orphan_timeouts", "orphan_refused"), 0)
    counts["orphans"] = count
    stop, held, usage = threading.Event(), [], {}
    threads = orphans(port, count, stop, counts, threading.Lock())
    threads.append(threading.Thread(target=sample, args=(server, stop, usage), daemon=True))
    threads[-1].start()

    async def run() -> None:
        await spectators(port, silent, asyncio.get_running_loop().time() + seconds, counts, held)

    try:
        asyncio.run(run())
    finally:
        stop.set()
        for s in held:
            s.close()
    for t in threads:
        t.join(60)
    out.put((counts, usage))


def report(counts: dict, delays: list, usage: dict, away: float, wall: float) -> list[str]:
    """Return the attack's lines of the benchmark's report."""
    lines = [f"attack: {counts.get('spectators', 0)} silent spectators ({counts['churn']} joins and leaves "
             f"of their rooms' seats, {counts['churn_failed']} refused), {counts['orphans']} orphan clients "
             f"asking for {HEAVY} ({counts['orphan_games']} games, {counts['orphan_timeouts']} stopped "
             f"at the bot timeout, {counts['orphan_refused']} requests refused)"]
    if delays:
        late = [d - away for d in delays]
        lines.append(f"takeover: {len(delays)} probes, person away {away:g} s: seat taken after "
                     f"{min(delays):.2f}-{max(delays):.2f} s (late by at most {max(late):.2f} s)")
    lines.append(f"server under attack: at most {usage.get('threads', 0)} threads and "
                 f"{usage.get('processes', 0)} child processes (bot workers, their fork server, its resource "
                 "tracker); "
                 f"CPU {usage.get('server_cpu', 0.0):.1f} s server, {usage.get('bot_cpu', 0.0):.1f} s bot "
                 f"workers in {wall:.0f} s")
    return lines


__all__ = ["HEAVY", "attacker", "cpu_seconds", "descendants", "orphans", "probes", "report", "sample",
           "silent_socket", "spectators"]
