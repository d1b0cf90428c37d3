"""What learns, how fast: learning curves of SB3 MaskablePPO, the CleanRL example and escoba-train
against env steps, CPU seconds and wall time, each trained on one process for a fixed budget.

Every method trains with the settings of ``docs/first_agent.md`` and is evaluated at regular points
of its training (evaluation time is not counted as training time):

- ``sb3``: sb3-contrib ``MaskablePPO`` on ``escoba_env.faces.sb3.make_vec_env`` (64 games against
  ``greedy``, one-round episodes, ``reward="round_points"``, ``gamma=1``, learning rate 5e-4, entropy
  coefficient 0.001) with ``sb3_card_policy()``: ``"MultiInputPolicy"`` with the CleanRL example's
  card features and card head; evaluated greedily (the argmax of the masked policy) on
  ``--eval-rounds`` one-round games against ``random`` and against ``greedy``;
- ``cleanrl``: ``examples/cleanrl_ppo.py`` with ``card_features=True`` (64 games against ``greedy``,
  one-round episodes, ``gamma=1``, learning rate 5e-4, entropy coefficient 0.001, 256 hidden units),
  evaluated the same way;
- ``train``: ``escoba-train`` (self-play with its league) in a child process, whose own duplicate
  evaluation against ``greedy`` is read from the run's ``metrics.csv`` as it is written (its points
  count its evaluations in its time).

The budget of each method is ``--seconds`` of training wall time and/or ``--steps`` env steps: a
method stops at the first it reaches. Every point records the env steps, the training wall seconds
and the CPU seconds (this process's for ``sb3`` and ``cleanrl``, the child's for ``train``): steps
and CPU seconds say what a method needs; wall seconds grow with the machine's load.

A tool that can be stopped: ``--out`` (a JSON of every point, then a PNG beside it) is rewritten
after every point, each method marked finished or not, so an interrupted run keeps what it did. The
``train`` child runs in a process group of its own and dies with this script on every way out (its
budget, an error, Ctrl-C, SIGTERM or SIGHUP: the group is killed; SIGKILL of this script: a
parent-death signal, on Linux). A fault ends in one line ``first_agent.py: ...`` and a non-zero
status; an existing ``--out`` is refused unless ``--overwrite``.

    nice python benchmarks/first_agent.py --seconds 300 --out docs/measurements/first_agent.json --overwrite
    nice python benchmarks/first_agent.py --steps 200000 --methods cleanrl train --out runs/first_agent.json
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
sys.path.insert(0, os.path.join(ROOT, "examples"))

import cleanrl_ppo  # noqa: E402

import escoba_env  # noqa: E402,F401
from escoba_env.faces.cli import OneLineParser, positive_float, positive_int  # noqa: E402

METHODS = ("sb3", "cleanrl", "train")
GRACE_S = 60.0
"""Seconds the train child gets to save and exit after its budget (SIGINT) before it is killed."""
_LIVE: list[subprocess.Popen] = []  # the children to kill on the way out


class Stopped(Exception):
    """A signal asked this script to stop (SIGTERM, SIGHUP)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Budget:
    """A method's budget: training seconds and/or env steps, and the evaluation points along it."""

    def __init__(self, seconds: float | None, steps: int | None, points: int):
        self.seconds, self.steps, self.points = seconds, steps, points

    def progress(self, spent: float, steps: int) -> float:
        """Return the share of the budget used (1: spent)."""
        return max(spent / self.seconds if self.seconds else 0.0, steps / self.steps if self.steps else 0.0)

    def due(self, done: int, spent: float, steps: int) -> bool:
        """Return True if point ``done + 1`` (after the start) is due, or the budget is spent."""
        return self.progress(spent, steps) >= min(1.0, done / self.points)


class Clock:
    """Training wall and CPU time of this process: counting while training, paused while evaluating."""

    def __init__(self):
        self.wall = self.cpu = 0.0
        self._wall0, self._cpu0 = time.perf_counter(), time.process_time()

    def pause(self) -> tuple[float, float]:
        """Stop counting; return the training (wall, CPU) seconds so far."""
        self.wall += time.perf_counter() - self._wall0
        self.cpu += time.process_time() - self._cpu0
        return self.wall, self.cpu

    def resume(self) -> None:
        """Count again."""
        self._wall0, self._cpu0 = time.perf_counter(), time.process_time()


class Results:
    """The output file, rewritten (whole, atomically) after every point."""

    def __init__(self, path: str, command: str, note: str, methods: list[str]):
        self.path = path
        self.data = {"command": command, "note": note,
                     "results": {m: {"finished": False, "points": []} for m in methods}}

    def add(self, method: str, point: dict) -> None:
        """Record one evaluation point of ``method`` and write the file."""
        self.data["results"][method]["points"].append(point)
        self.write()

    def end(self, method: str, error: str | None = None) -> None:
        """Mark ``method`` finished (or failed with ``error``) and write the file."""
        entry = self.data["results"][method]
        entry["finished"] = error is None
        if error is not None:
            entry["error"] = error
        self.write()

    def write(self) -> None:
        """Write the JSON whole: to a temporary file, then renamed over ``path``."""
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1)
        os.replace(tmp, self.path)

    def kept(self) -> str:
        """Return what the file holds, in words: each method's points and whether it finished."""
        parts = [f"{m} ({len(r['points'])} points{', finished' if r['finished'] else ''})"
                 for m, r in self.data["results"].items() if r["points"] or r["finished"]]
        return ", ".join(parts) or "no point yet"


def sb3_card_policy():
    """Return sb3-contrib's Dict-observation masked policy with the CleanRL example's card head.

    Its features extractor reads ``obs["observation"]``, adds ``examples/cleanrl_ppo.py``'s
    ``card_features``, and returns each card's score from one small network shared by the 40 cards
    followed by a 256-wide ReLU body; the action net adds the scores to a linear map of the body.
    """
    import torch  # the sb3 extra's dependencies, imported when that method runs
    from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from torch import nn

    hidden = 256

    class CardFeatures(BaseFeaturesExtractor):
        """Card scores (40) and the body's output (``hidden``)."""

        def __init__(self, space):
            super().__init__(space, features_dim=40 + hidden)
            self.agent = cleanrl_ppo.Agent(546 + 40 * cleanrl_ppo.CARD_FEATURES + 1, 40, hidden,
                                           card_head=True, activation=nn.ReLU)
            del self.agent.flat_actor, self.agent.critic  # SB3's own heads take their place

        def forward(self, obs):
            x = cleanrl_ppo.network_input(obs["observation"].cpu().numpy(), True)
            h = self.agent.body(x)
            return torch.cat([self.agent.card_scores(h, x), h], 1)

    class CardLogits(nn.Module):
        """Logits: the card scores plus a linear map of the body's output."""

        def __init__(self):
            super().__init__()
            self.flat = nn.Linear(hidden, 40)

        def forward(self, latent):
            return latent[:, :40] + self.flat(latent[:, 40:])

    class CardPolicy(MaskableMultiInputActorCriticPolicy):
        """``MultiInputPolicy`` with ``CardFeatures`` and ``CardLogits``."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs, features_extractor_class=CardFeatures,
                             net_arch=dict(pi=[], vf=[]))

        def _build(self, lr_schedule):
            super()._build(lr_schedule)
            self.action_net = CardLogits()
            self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1),
                                                  **self.optimizer_kwargs)

    return CardPolicy


def point(wall: float, cpu: float, steps: int, policy, rounds: int) -> dict:
    """Return one evaluation point: the budget used and the policy's score against random and greedy."""
    (r, r_se), (g, g_se) = (cleanrl_ppo.evaluate(policy, opp, rounds) for opp in ("random", "greedy"))
    return {"seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "steps": int(steps), "vs_random": r,
            "vs_random_se": r_se, "vs_greedy": g, "vs_greedy_se": g_se}


def run_sb3(budget: Budget, seed: int, rounds: int, record: Callable[[dict], None]) -> None:
    """Train MaskablePPO until the budget is spent, recording the evaluation points."""
    from sb3_contrib import MaskablePPO  # the sb3 extra

    from escoba_env.faces.sb3 import make_vec_env

    env = make_vec_env(64, opponents="greedy", reward="round_points", episode="round", seat=None)
    model = MaskablePPO(sb3_card_policy(), env, n_steps=64, batch_size=1024, n_epochs=4, learning_rate=5e-4,
                        gamma=1.0, ent_coef=0.001, seed=seed, verbose=0, device="cpu")

    def policy(obs, masks):
        dummy = {"observation": obs, "action_mask": masks.astype(np.int8)}
        return model.predict(dummy, action_masks=masks, deterministic=True)[0]

    clock, done = Clock(), 0
    record(point(0.0, 0.0, 0, policy, rounds))
    clock.resume()
    while True:
        model.learn(64 * 64, reset_num_timesteps=False)
        wall, cpu = clock.pause()
        if budget.due(done + 1, wall, model.num_timesteps):
            done += 1
            record(point(wall, cpu, model.num_timesteps, policy, rounds))
            if budget.progress(wall, model.num_timesteps) >= 1:
                return
        clock.resume()


def run_cleanrl(budget: Budget, seed: int, rounds: int, record: Callable[[dict], None]) -> None:
    """Train the CleanRL example until the budget is spent, recording the evaluation points."""
    import torch

    clock, done = Clock(), [0]

    class Spent(Exception):
        """Raised from the callback when the budget is spent."""

    def callback(agent, steps):
        wall, cpu = clock.pause()
        if budget.due(done[0] + 1, wall, steps):
            done[0] += 1
            record(point(wall, cpu, steps, cleanrl_ppo.greedy_policy(agent, True), rounds))
            if budget.progress(wall, steps) >= 1:
                raise Spent
        clock.resume()

    torch.manual_seed(seed)
    size = 546 + 40 * cleanrl_ppo.CARD_FEATURES + 1
    agent = cleanrl_ppo.Agent(size, 40, 256, card_head=True, activation=torch.nn.ReLU)
    record(point(0.0, 0.0, 0, cleanrl_ppo.greedy_policy(agent, True), rounds))
    clock.resume()
    try:
        cleanrl_ppo.train(num_envs=64, num_steps=64, iterations=10**9, opponents="greedy", seed=seed,
                          episode="round", gamma=1.0, lr=5e-4, ent_coef=0.001, hidden=256, card_features=True,
                          callback=callback)
    except Spent:
        pass


_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: Linux\n"
    "except (AttributeError, OSError):\n"
    "    pass  # elsewhere the parent's own clean-up is the only one\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(1)  # the parent died before the signal was armed\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n"
)
"""Runs a Python program (argv[2:]) that receives SIGKILL when the process ``argv[1]`` dies."""


def start_child(args: list[str], log, env: dict[str, str]) -> subprocess.Popen:
    """Return a Python child running ``args``, in a process group of its own, that dies with this process."""
    p = subprocess.Popen([sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *args],
                         stdout=subprocess.DEVNULL, stderr=log, env=env, start_new_session=True)
    _LIVE.append(p)
    return p


def kill_group(p: subprocess.Popen) -> None:
    """Kill ``p``'s process group (``p`` and everything it started) and reap ``p``; return None."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    p.wait()
    if p in _LIVE:
        _LIVE.remove(p)


def cpu_seconds(pid: int) -> float:
    """Return the CPU seconds of process ``pid`` and its reaped children so far (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def run_train(budget: Budget, seed: int, rounds: int, record: Callable[[dict], None]) -> None:
    """Run escoba-train in a child until the budget is spent, recording its evaluations as they come."""
    from agents.training.curve import read_evals

    with tempfile.TemporaryDirectory() as tmp:
        args = [os.path.join(ROOT, "train.py"), "--runs-dir", tmp, "--run-name", "first", "--num-envs", "64",
                "--num-steps", "32", "--workers", "1", "--threads", "1", "--episode", "round",
                "--eval-opponents", "greedy", "--eval-deals", "64", "--eval-interval", str(64 * 32 * 4),
                "--total-steps", str(budget.steps or 10**12), "--no-progress", "--no-tensorboard",
                "--seed", str(seed)]
        metrics = os.path.join(tmp, "first", "metrics.csv")
        with open(os.path.join(tmp, "stderr.txt"), "w+") as log:
            p = start_child(args, log, {**os.environ, "PYTHONPATH": ROOT})
            try:
                status = _follow(p, budget, metrics, read_evals, record)
            finally:
                kill_group(p)
            log.seek(0)
            lines = log.read().strip().splitlines()
        if status not in (0, 130) and not (status < 0 and -status == signal.SIGINT):
            raise RuntimeError(f"train.py ended with status {status}: {lines[-1] if lines else 'no message'}")


def _follow(p: subprocess.Popen, budget: Budget, metrics: str, read_evals, record) -> int:
    """Record the train child's evaluations as they appear; stop it at its budget; return its status."""
    start, seen, stop_at = time.monotonic(), 0, None
    base = resource.getrusage(resource.RUSAGE_CHILDREN)
    while True:
        status = p.poll()
        if status is None:
            cpu = cpu_seconds(p.pid)
        else:  # reaped: its whole CPU time is in this process's children's usage now
            end = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = end.ru_utime + end.ru_stime - base.ru_utime - base.ru_stime
        evals = read_evals(metrics).get("greedy") if os.path.exists(metrics) else None
        for i in range(seen, len(evals["step"]) if evals else 0):
            record({"seconds": round(evals["wall_s"][i], 1), "cpu_seconds": round(cpu, 1),
                    "steps": int(evals["step"][i]), "vs_greedy": evals["mean"][i]})
            seen = i + 1
        if status is not None:
            return status
        now = time.monotonic()
        if stop_at is None and budget.seconds and now - start >= budget.seconds:
            os.killpg(p.pid, signal.SIGINT)  # train.py saves and ends; its last evaluation stays
            stop_at = now
        if stop_at is not None and now - stop_at > GRACE_S:
            kill_group(p)
            return 0
        time.sleep(0.2)


def plot(results: dict[str, dict], out: str, note: str) -> None:
    """Draw points per round against env steps and CPU seconds, one panel per opponent, into ``out``."""
    import matplotlib  # the plot extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), dpi=110, sharey="row")
    for row, opp in enumerate(("random", "greedy")):
        axes_x = (("steps", "env steps (thousands)"), ("cpu_seconds", "CPU seconds"))
        for col, (x, label) in enumerate(axes_x):
            ax = axes[row][col]
            for name, entry in results.items():
                pts = [p for p in entry["points"] if f"vs_{opp}" in p]
                if pts:
                    scale = 1000 if x == "steps" else 1
                    ax.plot([p[x] / scale for p in pts], [p[f"vs_{opp}"] for p in pts], marker="o", ms=3,
                            label=name)
            ax.axhline(0.0, color="black", lw=0.8)
            ax.set_title(f"against {opp}")
            ax.set_xlabel(label)
            ax.grid(alpha=0.3)
        axes[row][0].set_ylabel("points per round, learner minus opponent")
    axes[1][1].legend(loc="lower right")
    fig.suptitle(note, fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def _stop(signum, frame) -> None:
    raise Stopped(signum)


def parse(argv: list[str] | None):
    """Return the command line's arguments (one line and status 2 for a bad one)."""
    ap = OneLineParser(prog="first_agent.py", description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=positive_float, default=None,
                    help="training wall seconds per method (default: 300 unless --steps is given)")
    ap.add_argument("--steps", type=positive_int, default=None, help="env steps per method")
    ap.add_argument("--points", type=positive_int, default=6, help="evaluations per method after the start")
    ap.add_argument("--eval-rounds", type=positive_int, default=2048, help="rounds of each evaluation")
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="first_agent.json", help="the JSON of every point (a PNG beside it)")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = ap.parse_args(argv)
    if args.seconds is None and args.steps is None:
        args.seconds = 300.0
    if os.path.exists(args.out) and not args.overwrite:
        ap.error(f"{args.out} already exists: pass --overwrite to replace it, or choose another --out")
    return args


def main(argv: list[str] | None = None) -> int:
    """Train each method for its budget, evaluating along the way; write the JSON and the PNG; return the
    exit status."""
    args = parse(argv)
    import torch

    torch.set_num_threads(1)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
    # Ctrl-C stops the run even when this process inherited SIGINT ignored (started in the background
    # of a non-interactive shell, as `cmd &` does): Python then leaves SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    load = os.getloadavg()
    budget = Budget(args.seconds, args.steps, args.points)
    what = " and ".join(x for x in (args.seconds and f"{args.seconds:g} s of training",
                                    args.steps and f"{args.steps} env steps") if x)
    note = (f"{what} per method (the first reached), one process each; load average at the start "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (os.getloadavg); {os.cpu_count()} CPUs")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    command = "python benchmarks/first_agent.py " + " ".join(argv if argv is not None else sys.argv[1:])
    results = Results(args.out, command, note, args.methods)
    results.write()
    runners = {"sb3": run_sb3, "cleanrl": run_cleanrl, "train": run_train}
    failed = []
    try:
        for m in args.methods:
            try:
                runners[m](budget, args.seed, args.eval_rounds, lambda pt, m=m: results.add(m, pt))
            except (ValueError, TypeError, OSError, RuntimeError, ImportError, ArithmeticError) as exc:
                failed.append(m)
                results.end(m, " ".join(str(exc).split()) or type(exc).__name__)
                continue
            results.end(m)
    except (KeyboardInterrupt, Stopped) as exc:
        for p in list(_LIVE):
            kill_group(p)
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"stopped by {exc}"
        print(f"first_agent.py: {why}; {args.out} keeps {results.kept()}", file=sys.stderr)
        return 130 if isinstance(exc, KeyboardInterrupt) else 128 + exc.signum
    png = os.path.splitext(args.out)[0] + ".png"
    plot(results.data["results"], png, note)
    print(f"wrote {args.out} and {png}")
    for name, entry in results.data["results"].items():
        print(name, [(p["steps"], p["cpu_seconds"], round(p.get("vs_random", math.nan), 3),
                      round(p["vs_greedy"], 3)) for p in entry["points"]])
    if failed:
        errors = "; ".join(f"{m}: {results.data['results'][m]['error']}" for m in failed)
        print(f"first_agent.py: error: {errors} ({args.out} keeps {results.kept()})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except Exception as exc:  # noqa: BLE001 - any fault ends in one line, the children killed
        for child in list(_LIVE):
            kill_group(child)
        print(f"first_agent.py: error: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        raise SystemExit(1) from None
