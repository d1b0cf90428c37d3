"""Web arena under load: N concurrent loopback clients playing whole games against bots.

Starts ``escoba-arena`` (``python -m escoba_arena.web``) in a process of its own on a free
loopback port, then N client threads, each with one keep-alive connection, create games against
the opponents given (in turn) and play them to the end, picking a random legal move (seeded).
It stops after ``--games`` games or ``--seconds``, whichever comes first, and prints games/s,
p50/p99/max latency per request kind and the server's resident memory (RSS) before and after.

    python benchmarks/bench_arena.py                              # 20 clients, 200 games
    python benchmarks/bench_arena.py --clients 20 --games 1000 --seconds 180
    python benchmarks/bench_arena.py --clients 4 --opponents expert
    python benchmarks/bench_arena.py --rooms 200 --seconds 120     # rooms: 200 tables of 4 people
    python benchmarks/bench_arena.py --rooms 50 --seconds 120 --attack   # the same, under attack

With ``--rooms R`` it opens R rooms of 4 simulated people instead (WebSocket clients, all in one
asyncio loop), who play whole games (to ``--room-target``), each waiting ``--think`` seconds
before a move; it prints moves/s, the move-to-broadcast latency (from a person's move until all 4
people of the table have the new state: p50/p99/max) and the server's RSS. With ``--attack`` it
measures them under attack (``arena_attack``): spectators that never read, clients asking for the
costliest bot again and again, each from an address of its own, and takeover probes (how long a seat
of a person who left waits for its bot); it prints the takeover delays and the server's threads,
bot processes and CPU under the attack.

With ``--broadcast-games N`` it runs no server: N games of 4 people are played through the rooms'
message handler in this process, to stubs of connections, and it prints the server's work per move
(checking the move, playing it, making and sending the 4 state messages), without the network.

    python benchmarks/bench_arena.py --broadcast-games 30
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from escoba_env.faces.cli import OneLineParser, guarded_main, positive_float, positive_int

ROOT = Path(__file__).resolve().parents[1]


def rss_mib(pid: int) -> float | None:
    """Return the resident memory of process ``pid`` in MiB (Linux ``/proc``), or None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def start_server(extra: list[str] | None = None) -> tuple[subprocess.Popen, int]:
    """Start the arena on a free loopback port (``extra``: more options); return (process, port)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "escoba_arena.web", "--host", "127.0.0.1", "--port", "0",
                             *(extra or [])],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("Escoba arena: http://"):
        proc.kill()
        raise RuntimeError(f"the arena did not start: {(line + proc.stderr.read()).strip()[:300]}")
    port = int(line.split()[2].rstrip("/").rsplit(":", 1)[1])
    for _ in range(200):
        try:
            Client(port).call("GET", "/api/files")
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the arena does not answer")


class Client:
    """One keep-alive HTTP connection to the arena, timing each request by kind.

    ``address``: the client's own address, forwarded in ``X-Forwarded-For`` (the server trusts the
    benchmark as its proxy): each simulated user has the per-client share of a real one.
    """

    def __init__(self, port: int, address: str | None = None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.times: dict[str, list[float]] = {}
        self.forwarded = {} if address is None else {"X-Forwarded-For": address}

    def call(self, method: str, path: str, body: dict | None = None, kind: str | None = None) -> dict:
        """Send one request; return its JSON answer (RuntimeError on a non-2xx status)."""
        data = None if body is None else json.dumps(body)
        headers = {**self.forwarded, **({"Content-Type": "application/json"} if data is not None else {})}
        t0 = time.perf_counter()
        self.conn.request(method, path, body=data, headers=headers)
        res = self.conn.getresponse()
        raw = res.read()
        if kind is not None:
            self.times.setdefault(kind, []).append(time.perf_counter() - t0)
        if not 200 <= res.status < 300:
            raise RuntimeError(f"{method} {path}: {res.status} {raw[:200]!r}")
        return json.loads(raw)


def sample_rss(pid: int, stop: threading.Event, quota: list[int], samples: list) -> None:
    """Append (games finished, server RSS in MiB) to ``samples`` every second until ``stop`` is set."""
    while not stop.wait(1.0):
        samples.append((quota[1], rss_mib(pid)))


def play(port: int, opponents: list[str], seed: int, stop: threading.Event, quota: list[int],
         lock: threading.Lock, out: list) -> None:
    """Play whole games until the quota is used up or ``stop`` is set; append (times, games, error) to out."""
    address = f"10.7.{seed // 250 % 250}.{seed % 250 + 1}"  # each client its own address
    client, rng, games, error = Client(port, address), random.Random(seed), 0, None
    try:
        while not stop.is_set():
            with lock:
                if quota[0] <= 0:
                    break
                quota[0] -= 1
                k = quota[0]
            ans = client.call("POST", "/api/games", {"opponents": [opponents[k % len(opponents)]]}, "create")
            gid, view = ans["id"], ans["view"]
            while not view["done"] and not stop.is_set():
                m = rng.choice(view["moves"])
                view = client.call("POST", f"/api/games/{gid}/move",
                                   {"card": m["card"], "capture": rng.choice(m["options"])}, "move")["view"]
            client.call("GET", f"/api/games/{gid}", kind="view")
            games += view["done"]
            with lock:
                quota[1] += view["done"]
    except (OSError, RuntimeError, ValueError) as exc:  # reported once by main, the others stop
        error = str(exc)
        stop.set()
    finally:
        client.conn.close()
        out.append((client.times, games, error))


async def _room_people(port: int, rng: random.Random, target: int, think: float, deadline: float,
                       lat: list[float], games: list[int]) -> None:
    """Open one room of 4 people over HTTP, then play its games over 4 WebSockets until ``deadline``."""
    import asyncio

    from websockets.asyncio.client import connect

    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        body = json.dumps({"rules": {"num_players": 4, "target_score": target}, "seats": ["human"] * 4})
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write((f"POST /api/rooms HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}").encode())
        raw = await reader.read()
        writer.close()
        head, _, payload = raw.partition(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0].decode(errors="replace")
        if " 201 " not in status:
            raise RuntimeError(f"POST /api/rooms: {status}: {payload.decode(errors='replace')[:200]}")
        ans = json.loads(payload)
        tokens = [x["link"].split("#t=", 1)[1] for x in ans["links"]]
        sent: dict[int, float] = {}
        seen: dict[int, int] = {}
        done = asyncio.Event()

        async def person(token: str, sent=sent, seen=seen, done=done) -> None:
            async with connect(f"ws://127.0.0.1:{port}/api/rooms/ws", max_size=2**22) as ws:
                await ws.send(json.dumps({"type": "hello", "token": token}))
                moved = -1
                async for text in ws:
                    m = json.loads(text)
                    if m.get("type") != "state" or m["view"] is None:
                        continue
                    v = m["view"]
                    k = v["moves_played"]
                    if k in sent:  # this state is the answer to move k: count the 4th arrival
                        seen[k] = seen.get(k, 0) + 1
                        if seen[k] == 4:
                            lat.append(loop.time() - sent.pop(k))
                    if m["room"]["status"] == "over":
                        done.set()
                        return
                    if v["your_turn"] and k > moved and loop.time() < deadline:
                        moved = k
                        await asyncio.sleep(think * (0.5 + rng.random()))
                        mv = rng.choice(v["moves"])
                        sent[k + 1] = loop.time()
                        await ws.send(json.dumps({"type": "move", "card": mv["card"],
                                                  "capture": rng.choice(mv["options"])}))
                    if loop.time() >= deadline and not v["your_turn"]:
                        return

        tasks = [asyncio.create_task(person(t)) for t in tokens]
        await asyncio.wait(tasks, timeout=max(0.5, deadline - loop.time() + 2))
        for t in tasks:
            t.cancel()
        if done.is_set():
            games.append(1)


def _server_flags(args) -> list[str]:
    """Return the server's options of the rooms mode (and of its attacks)."""
    # Every simulated person comes from one address: lift the per-client quotas (a real study's people
    # come from their own), and let every person have a connection.
    n = str(4 * args.rooms + 50)  # the victims' rooms, the next ones they open, the takeover probes
    sockets = str(max(4 * args.rooms + 100, 2000))
    flags = ["--rooms-per-client", n, "--waiting-per-client", n, "--rooms-per-minute", str(60 * int(n)),
             "--max-connections", sockets, "--connections-per-client", sockets,
             "--pending-per-client", sockets]
    if args.attack:  # the attackers pose as addresses of their own, forwarded by the benchmark as a proxy
        flags += ["--trusted-proxy", "127.0.0.1", "--bot-timeout", f"{args.bot_timeout:g}",
                  "--takeover-seconds", f"{args.takeover_seconds:g}"]
    return flags


async def _rooms_run(args, proc, port: int, lat: list, games: list, peak: list, delays: list) -> float:
    """Play the victims' rooms (and the takeover probes) until ``--seconds``; return the time it took."""
    import asyncio

    loop = asyncio.get_running_loop()
    t0 = loop.time()
    deadline = t0 + args.seconds

    async def sample() -> None:
        while loop.time() < deadline:
            await asyncio.sleep(1.0)
            peak[0] = max(peak[0], rss_mib(proc.pid) or 0.0)

    jobs = [sample()]
    if args.attack:
        import arena_attack

        jobs.append(arena_attack.probes(port, args.takeover_seconds, args.probe_every, deadline, delays))
    rngs = [random.Random(args.seed + i) for i in range(args.rooms)]
    await asyncio.gather(*jobs, *(_room_people(port, r, args.room_target, args.think, deadline, lat, games)
                                  for r in rngs))
    return min(loop.time(), deadline) - t0


def _start_attack(args, port: int, pid: int) -> tuple:
    """Start the attacker's process (it samples the server too); return (process, its queue)."""
    import multiprocessing

    import arena_attack

    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    attacker = ctx.Process(target=arena_attack.attacker, daemon=True,
                           args=(port, args.silent_spectators, args.orphans, args.seconds, pid, out))
    attacker.start()
    return attacker, out


def rooms_main(args, load: str) -> int:
    """The ``--rooms`` mode (module docstring); with ``--attack``, under the attacks of ``arena_attack``."""
    import asyncio

    proc, port = start_server(_server_flags(args))
    delays, usage, counts, attack = [], {}, {}, None
    try:
        before = rss_mib(proc.pid)
        lat: list[float] = []
        games: list[int] = []
        peak = [before or 0.0]
        if args.attack:
            attack = _start_attack(args, port, proc.pid)
        wall = asyncio.run(_rooms_run(args, proc, port, lat, games, peak, delays))
        after = rss_mib(proc.pid)
        if attack is not None:
            counts, usage = attack[1].get(timeout=120)
    finally:
        if attack is not None:
            attack[0].join(30)
            attack[0].kill()
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    if hasattr(os, "getloadavg"):
        load += " (before), {:.2f} {:.2f} {:.2f} (after)".format(*os.getloadavg())
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs{load}, "
          f"python {platform.python_version()}")
    ts = np.array(lat) * 1e3
    print(f"{args.rooms} rooms x 4 people (think {args.think:g} s, target {args.room_target}): "
          f"{len(ts)} moves in {wall:.1f} s = {len(ts) / wall:.1f} moves/s, {sum(games)} games finished")
    if len(ts):
        p50, p99 = np.percentile(ts, [50, 99])
        print(f"move-to-broadcast (all 4 people have it) ms: p50 {p50:.1f}, p99 {p99:.1f}, "
              f"max {ts.max():.1f}")
    fmt = lambda v: "n/a" if v is None else f"{v:.0f} MiB"  # noqa: E731
    print(f"server RSS: {fmt(before)} before, {fmt(peak[0])} peak, {fmt(after)} after")
    if args.attack:
        import arena_attack

        print("\n".join(arena_attack.report(counts, delays, usage, args.takeover_seconds, wall)))
    return 0


def broadcast_main(args, load: str) -> int:
    """The ``--broadcast-games`` mode: the server's move-to-broadcast work alone, in this process."""
    import asyncio

    from escoba_arena.web.deal_key import DealKey
    from escoba_arena.web.lobby import Arena
    from escoba_arena.web.room_conns import Outbox
    from escoba_arena.web.rooms_routes import RoomHub, RoomOptions

    class Sink:
        """A connection that keeps only the size of what it is sent."""

        sent = 0

        async def send_text(self, text: str) -> None:
            Sink.sent += len(text)

        async def close(self, code: int = 1000) -> None:
            pass

    async def run() -> tuple[int, float]:
        hub = RoomHub(Arena([]), RoomOptions(rate=1e9, burst=1e9, rooms_per_minute=1e9))
        hub.rooms.key = DealKey(bytes(32))  # a fixed key: the same games on every run
        rng, moves, spent = random.Random(args.seed), 0, 0.0
        for g in range(args.broadcast_games):
            room, _, _ = hub.rooms.open({"rules": {"num_players": 4, "target_score": args.room_target},
                                         "seats": ["human"] * 4, "seed": args.seed + g})
            boxes = [Outbox(Sink()) for _ in range(4)]
            hub.conns[room.rid] = {(box, s) for s, box in enumerate(boxes)}
            for s in range(4):
                hub.rooms.join(room, s)
            while room.status == "playing":
                seat = room.game.state.to_act
                mv = rng.choice(room.game.view_for(seat)["moves"])
                text = json.dumps({"type": "move", "card": mv["card"], "capture": rng.choice(mv["options"])})
                t0 = time.perf_counter()
                refused = await hub.handle(room, seat, text)
                while any(box.queue for box in boxes):  # each connection's writer sends its message
                    await asyncio.sleep(0)
                spent += time.perf_counter() - t0
                if refused is not None:
                    raise RuntimeError(f"move refused: {refused.message}")
                moves += 1
            hub.rooms.forget(room.rid)
        return moves, spent

    moves, spent = asyncio.run(run())
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs{load}, "
          f"python {platform.python_version()}")
    print(f"{args.broadcast_games} games of 4 people in one process (no network): {moves} moves, "
          f"{spent / moves * 1e3:.3f} ms per move from its message to the 4 state messages sent, "
          f"{Sink.sent / moves / 4 / 1024:.1f} KiB per message")
    return 0


def _attack_options(ap) -> None:
    """Add the options of the rooms mode's attacks (``--attack``)."""
    ap.add_argument("--attack", action="store_true",
                    help="rooms mode: measure the rooms under attack (benchmarks/arena_attack.py): silent "
                         "spectators, orphan bots, and takeover probes")
    ap.add_argument("--silent-spectators", type=positive_int, default=50,
                    help="--attack: spectators that never read (default 50)")
    ap.add_argument("--orphans", type=positive_int, default=8,
                    help="--attack: clients asking again and again for the costliest bot (default 8)")
    ap.add_argument("--bot-timeout", type=positive_float, default=5.0,
                    help="--attack: the server's --bot-timeout (default 5)")
    ap.add_argument("--takeover-seconds", type=positive_float, default=5.0,
                    help="--attack: the server's --takeover-seconds (default 5)")
    ap.add_argument("--probe-every", type=positive_float, default=15.0,
                    help="--attack: seconds between two takeover probes (default 15)")


def main(argv: list[str] | None = None) -> int:
    """Run the load test and print its figures; return the exit status."""
    ap = OneLineParser(prog="bench_arena.py", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=positive_int, default=20, help="concurrent clients (default 20)")
    ap.add_argument("--games", type=positive_int, default=200, help="games in all (default 200)")
    ap.add_argument("--seconds", type=positive_float, default=180.0,
                    help="stop starting games after this long (default 180)")
    ap.add_argument("--opponents", nargs="+", default=["random", "greedy"],
                    help="opponent specs, used in turn (default: random greedy)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the clients' move choices (default 0)")
    ap.add_argument("--rooms", type=positive_int, default=None,
                    help="rooms mode: this many rooms of 4 WebSocket people (see above)")
    ap.add_argument("--think", type=positive_float, default=1.0,
                    help="rooms mode: seconds a person waits before a move, on average (default 1)")
    ap.add_argument("--room-target", type=positive_int, default=11,
                    help="rooms mode: target score of the rooms' games (default 11)")
    _attack_options(ap)
    ap.add_argument("--broadcast-games", type=positive_int, default=None, metavar="N",
                    help="rooms mode without a server: play N games of 4 people through the rooms' message "
                         "handler in this process and time the move-to-broadcast work alone")
    args = ap.parse_args(argv)
    load = ", load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else ""
    if args.broadcast_games is not None:
        return broadcast_main(args, load)
    if args.rooms is not None:
        return rooms_main(args, load)
    proc, port = start_server(["--trusted-proxy", "127.0.0.1"])  # each client forwards its own address
    try:
        before = rss_mib(proc.pid)
        # quota: [games left to start, games finished]; RSS sampled each second as (finished, MiB).
        stop, lock, quota, out = threading.Event(), threading.Lock(), [args.games, 0], []
        samples: list[tuple[int, float | None]] = []
        sampler = threading.Thread(target=sample_rss, args=(proc.pid, stop, quota, samples), daemon=True)
        sampler.start()
        threads = [threading.Thread(target=play, args=(port, args.opponents, args.seed + i, stop, quota, lock,
                                                       out)) for i in range(args.clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        deadline = t0 + args.seconds
        for t in threads:
            t.join(max(0.0, deadline - time.perf_counter()))
        stop.set()  # past --seconds: clients end the move they are in and stop
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        sampler.join()
        after = rss_mib(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    errors = [e for _, _, e in out if e]
    if errors:
        raise RuntimeError(f"a client failed: {errors[0]}")
    games = sum(g for _, g, _ in out)
    if hasattr(os, "getloadavg"):
        load += " (before), {:.2f} {:.2f} {:.2f} (after)".format(*os.getloadavg())
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs{load}, "
          f"python {platform.python_version()}")
    print(f"{args.clients} clients vs {'/'.join(args.opponents)}: {games} games in {wall:.1f} s = "
          f"{games / wall:.2f} games/s")
    print(f"{'request':<8} {'count':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for kind in ("create", "move", "view"):
        ts = np.array([x for times, _, _ in out for x in times.get(kind, [])]) * 1e3
        if len(ts):
            p50, p99 = np.percentile(ts, [50, 99])
            print(f"{kind:<8} {len(ts):>7} {p50:>8.1f} {p99:>8.1f} {ts.max():>8.1f}")
    fmt = lambda v: "n/a" if v is None else f"{v:.0f} MiB"  # noqa: E731
    print(f"server RSS: {fmt(before)} before, {fmt(after)} after")
    known = [(g, r) for g, r in samples if r is not None]
    if known:  # about ten points along the run: flat once the kept games (the LRU) are full
        picks = sorted({known[round(i * (len(known) - 1) / 9)] for i in range(10)})
        print("server RSS (MiB) by games finished: " + ", ".join(f"{g}: {r:.0f}" for g, r in picks))
    return 0


if __name__ == "__main__":
    sys.exit(guarded_main("bench_arena.py", main))
