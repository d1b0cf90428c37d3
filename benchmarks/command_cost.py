"""What the documented commands cost: CPU seconds and wall seconds of each, run as a user runs it.

Each command of ``COMMANDS`` (the long ones README and the docs name) runs in a fresh temporary
folder with this Python's console scripts first on PATH; its CPU seconds are those of the command
and every process it started (user + system, from the children's resource usage), its wall seconds
those of this machine at that moment. CPU seconds are what the docs quote; wall seconds grow with the
machine's load and shrink with idle cores, so the load average before and after each command is
printed beside them. Writes a JSON line per command to ``--out`` (appended) and prints a Markdown row.

    nice python benchmarks/command_cost.py --out docs/measurements/command_cost.jsonl
    nice python benchmarks/command_cost.py --only demo-training quick-card
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout

from escoba_env.faces.cli import OneLineParser, guarded_main  # noqa: E402

COMMANDS = {
    "quickstart": "escoba-evaluate --agents random greedy expert neural-2p --rounds 100",
    "demo-training": "escoba-train --run-name demo --total-steps 2000000",
    "quick-card": "escoba-bench card expert --table 2p --quick",
    "four-players": "escoba-evaluate --players 4 --partnerships --sevens-rule primera --rounds 500 "
                    "--out results/four",
    "ladder": "escoba-evaluate --agents random greedy expert search:sims=100 --rounds 2000 --workers 2 "
              "--out results/ladder",
}
"""The documented commands measured, by name (README and docs/tournaments.md, docs/agents.md)."""


def measure(command: str) -> dict:
    """Return the wall and CPU seconds of ``command`` run in a fresh folder, with the load around it."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        r = subprocess.run(shlex.split(command), cwd=tmp, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        last = r.stderr.strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"{command!r} ended with status {r.returncode}: {last[0]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"command": command, "cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
            "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(), "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
            "date": time.strftime("%Y-%m-%d", time.gmtime())}


def main(argv: list[str] | None = None) -> None:
    """Measure the chosen commands one after another; print a Markdown row for each."""
    ap = OneLineParser(prog="command_cost.py", description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=list(COMMANDS), default=list(COMMANDS))
    ap.add_argument("--out", help="append one JSON line per command to this file")
    args = ap.parse_args(argv)
    print("| command | CPU seconds | wall seconds | load average before / after |")
    print("|---|---:|---:|---|")
    for name in args.only:
        row = {"name": name, **measure(COMMANDS[name])}
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
        print(f"| `{row['command']}` | {row['cpu_s']:.0f} | {row['wall_s']:.0f} | "
              f"{row['load_before'][0]:.1f} / {row['load_after'][0]:.1f} |", flush=True)


if __name__ == "__main__":
    raise SystemExit(guarded_main("command_cost.py", main))
