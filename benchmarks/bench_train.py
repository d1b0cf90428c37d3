"""Training throughput: env steps per second, including inference and PPO updates, per worker count.

Runs the real ``agents.training.Trainer`` loop (``Trainer.run``: no evaluation, no TensorBoard) for a
few updates after one warm-up update and prints, per configuration, per worker count and per scheme
(synchronous, or rollouts overlapped with the update), env steps/s in wall time and per
CPU-second (of the trainer and its worker processes together: the CPU figure is what the machine
would give if nothing else ran on it; on a shared machine the wall figure mostly measures the
neighbours), and the share of the wall time the learner spent in (or waiting for) the rollout rather
than in GAE and the PPO update. "Env steps" are decisions of every seat in every game, the
opponents' included, the unit of ``total_steps`` and of ``charts/sps``. Under every row it prints the
bytes the Ray backend sends per update (``transfer_bytes``): the weights out, the rollouts back.

    python benchmarks/bench_train.py --workers 1 2         # pure self-play and the default league
    python benchmarks/bench_train.py --workers 1 2 --overlap off on --repeat 3
    python benchmarks/bench_train.py --workers 1 4 8 16 --threads 4 --device cuda
    python benchmarks/bench_train.py --hidden 256 256 --updates 5 --profile
    python benchmarks/bench_train.py --endgame-features
    bash benchmarks/scaling_device.sh      # the many-core / GPU scaling run, logged to docs/measurements
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pickle
import pstats
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from agents.nets.neural import HEADS  # noqa: E402
from agents.training import Config, Trainer  # noqa: E402
from agents.training.workers import LocalProcesses, _state_dicts, shards  # noqa: E402
from escoba_env.faces.cli import (  # noqa: E402
    OneLineParser,
    add_rules_arguments,
    guarded_main,
    positive_int,
    rules_from_args,
)
from escoba_env.rulebook.rules import Rules  # noqa: E402


def _proc_cpu(pid: int) -> float:
    """Return the user + system CPU seconds of process ``pid`` so far (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_now(t: Trainer) -> float:
    """Return the CPU seconds used so far by this process and the trainer's worker processes."""
    procs = t.workers.procs if isinstance(t.workers, LocalProcesses) else []
    return time.process_time() + sum(_proc_cpu(p.pid) for p in procs)


def _pickled(obj: object) -> int:
    """Return the size in bytes of ``obj`` pickled with protocol 5, as Ray serializes its objects."""
    return len(pickle.dumps(obj, protocol=5))


def transfer_bytes(t: Trainer, results: list[dict]) -> dict[str, int]:
    """Return the bytes the Ray backend sends per update for trainer ``t`` whose last rollout gave the
    workers' ``results``: ``weights`` (the policy and critic broadcast once per rollout: one object, copied
    once to every node that runs workers), ``rollouts`` (what the workers send back, all of them together:
    each its result and its shard of the rollout buffers, ``RayRolloutActor.rollout``) and ``snapshot``
    (a league snapshot, sent to every node when one is taken).

    The sizes are those of the objects pickled with protocol 5, Ray's serialization (arrays and tensors
    as raw buffers); Ray adds a small header per object. The local backends send none of this over a
    network (shared memory and pipes), the same objects in kind."""
    weights = _state_dicts(t.net, t.critic)
    bufs = {k: v.numpy() for k, v in t.buf.items()}
    parts = shards(t.cfg.num_envs, len(results))
    rollouts = sum(_pickled((res, {k: v[:, lo:hi] for k, v in bufs.items()}))
                   for res, (lo, hi) in zip(results, parts, strict=True))
    return {"weights": _pickled(weights), "rollouts": rollouts, "snapshot": _pickled(weights[0])}


def measure(cfg: Config, updates: int, profile: bool = False) -> dict[str, float]:
    """Return the wall and CPU seconds of ``updates`` updates of the training loop, the seconds the learner
    spent in (or waiting for) rollouts, and the env steps.

    The loop runs ``updates + 2`` updates and the figures cover updates 2 to ``updates + 1``: the first
    one warms up (worker start, allocations, first calls, an overlapped run's unoverlapped first
    rollout) and the last one of an overlapped run starts no next rollout.
    """
    t = Trainer(cfg)
    last: list[list[dict]] = []
    apply = t._apply

    def keep(res: list[dict]) -> None:  # the workers' results of the last rollout, for transfer_bytes
        last[:] = [res]
        apply(res)

    t._apply = keep
    marks: list[tuple[float, float, float]] = []
    prof = cProfile.Profile() if profile else None

    def mark(tr: Trainer, _stats: dict) -> None:
        if prof and len(marks) == 1:
            prof.enable()
        if prof and len(marks) == updates + 1:
            prof.disable()
        marks.append((time.perf_counter(), cpu_now(tr), tr.last_rollout_s))

    t.run(max_updates=updates + 2, callback=mark)
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    return {"wall": marks[updates][0] - marks[0][0], "cpu": marks[updates][1] - marks[0][1],
            "rollout_wall": sum(m[2] for m in marks[1:updates + 1]),
            "steps": updates * cfg.num_steps * cfg.num_envs, **transfer_bytes(t, last[0])}


def _mb(n: int) -> str:
    """Return a byte count in MB (10^6 bytes), or kB under one MB."""
    return f"{n / 1e6:,.2f} MB" if n >= 10**6 else f"{n / 1e3:,.1f} kB"


def _device(text: str) -> str:
    """Return ``text`` if torch knows the device and it is usable here (an argparse type)."""
    try:
        dev = torch.device(text)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(f"not a torch device: {text!r} (cpu or cuda)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(f"{text!r}: CUDA is not available on this machine")
    if dev.type not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"device {text!r}: only cpu and cuda are supported")
    return text


def _rules_text(rules: Rules) -> str:
    """Return the rules options that differ from the defaults, or 'default'."""
    d = Rules().to_dict()
    return ", ".join(f"{k}={v}" for k, v in rules.to_dict().items() if d[k] != v) or "default"


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the configurations and print their throughput; return the exit status."""
    ap = OneLineParser(prog="bench_train.py", description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", type=positive_int, default=Config.num_envs)
    ap.add_argument("--num-steps", type=positive_int, default=Config.num_steps)
    ap.add_argument("--hidden", type=positive_int, nargs="+", default=list(Config().hidden))
    ap.add_argument("--head", default=Config.head, choices=HEADS)
    ap.add_argument("--num-minibatches", type=positive_int, default=Config.num_minibatches)
    ap.add_argument("--update-epochs", type=positive_int, default=Config.update_epochs)
    ap.add_argument("--threads", type=positive_int, default=Config.threads,
                    help="torch threads of the learner")
    ap.add_argument("--workers", type=positive_int, nargs="+", default=[1],
                    help="rollout worker counts to measure (1: in the trainer's process)")
    ap.add_argument("--device", type=_device, default=Config.device,
                    help="torch device of the learner: cpu or cuda")
    ap.add_argument("--endgame-features", action="store_true",
                    help="the network also reads the exact 2-player endgame values")
    ap.add_argument("--overlap", choices=("off", "on"), nargs="+", default=["off"],
                    help="schemes to measure: off (synchronous), on (rollouts overlap the update)")
    ap.add_argument("--league", choices=("self-play", "default"), nargs="+", default=["self-play", "default"],
                    help="opponent mixes to measure: self-play only, and the default league")
    ap.add_argument("--repeat", type=positive_int, default=1,
                    help="measure every row this many times, interleaved (a shared machine drifts)")
    ap.add_argument("--updates", type=positive_int, default=3)
    ap.add_argument("--profile", action="store_true", help="print the trainer's top functions (cProfile)")
    add_rules_arguments(ap.add_argument_group("rules (defaults: escoba_env.Rules, docs/rules.md)"))
    args = ap.parse_args(argv)
    try:
        rules = rules_from_args(args)
    except ValueError as e:
        print(f"bench_train.py: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs visible, load average "
          f"{os.getloadavg()[0]:.1f}, threads={args.threads}, num_envs={args.num_envs}, "
          f"num_steps={args.num_steps}, hidden={args.hidden}, head={args.head}, "
          f"minibatches={args.num_minibatches}, epochs={args.update_epochs}, device={args.device}, "
          f"endgame_features={args.endgame_features}, rules: {_rules_text(rules)}", flush=True)
    leagues = {
        "self-play only": dict(opp_self=1.0, opp_snapshot=0.0, opp_greedy=0.0, opp_expert=0.0),
        "default league": {},
    }
    leagues = {k: v for k, v in leagues.items() if k.split()[0] in args.league}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows = [(r, label, league, k, ov) for r in range(args.repeat) for label, league in leagues.items()
                    for k in args.workers for ov in args.overlap]
            for i, (rep, label, league, k, ov) in enumerate(rows):
                cfg = Config(run_name=f"bench{i}", runs_dir=tmp, num_envs=args.num_envs, overlap=ov == "on",
                             num_steps=args.num_steps, hidden=tuple(args.hidden), head=args.head,
                             num_minibatches=args.num_minibatches, update_epochs=args.update_epochs,
                             threads=args.threads, eval_interval=0, device=args.device,
                             endgame_features=args.endgame_features, tensorboard=False, progress=False,
                             snapshot_interval=1, workers=k, total_steps=10**12, rules=rules.to_dict(),
                             **league)
                r = measure(cfg, args.updates, args.profile)
                scheme = "overlapped" if ov == "on" else "synchronous"
                print(f"run {rep + 1}, {label}, {k} worker(s), {scheme}: {r['steps'] / r['wall']:,.0f} env "
                      f"steps/s wall, {r['steps'] / r['cpu']:,.0f} per CPU-second | learner in or waiting "
                      f"for the rollout {r['rollout_wall'] / r['wall']:.0%} of the wall time | load average "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
                step_b = r["rollouts"] / (cfg.num_envs * cfg.num_steps)
                print(f"  bytes per update on a Ray cluster: weights {_mb(r['weights'])} out (once to each "
                      f"node), rollouts {_mb(r['rollouts'])} back from the workers ({step_b:,.0f} B per env "
                      f"step); a league snapshot {_mb(r['snapshot'])} out (once to each node)", flush=True)
    except (ValueError, OSError) as e:
        print(f"bench_train.py: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_train.py", main))
