"""Where the rollout workers run: in the trainer's process, in local processes, or as Ray actors.

All three give the trainer the same interface (``set_snapshot``, ``start`` then ``finish`` a rollout,
or ``rollout`` for both, ``close``) and fill the trainer's rollout buffers with the same numbers for
the same worker count. The trainer passes one set of buffers, or two when it overlaps rollouts with
the update (``Config.overlap``): each rollout names the set it fills, so the workers write batch k+1
into one set while the learner reads batch k from the other.

- ``InProcess`` (``workers=1`` without overlap): one ``RolloutWorker`` over all games, sharing the
  learner's network when it is on the CPU;
- ``LocalProcesses`` (``workers=K`` or ``overlap``, ``backend="local"``): K forked processes; the
  rollout buffers and a copy of the weights live in shared memory, so one rollout costs two small
  pipe messages per worker (the command, then the shard's episode statistics and game state), never
  a per-step object;
- ``RayActors`` (``backend="ray"``): K Ray actors, on a cluster or a private local Ray instance bound
  to 127.0.0.1 without dashboard; the weights go out once per rollout through the object store and
  each actor sends its shard's buffers back.

A worker that dies or fails raises ``WorkerError`` in the trainer, which saves the last completed
update and stops (see ``Trainer.run``); the other workers are shut down, nothing waits forever.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from typing import Any

import torch

from escoba_env.rulebook.rules import Rules

from ..nets.neural import PolicyValueNet
from ..tournament.raycluster import join, leave, loopback_only
from .config import Config
from .ppo import ValueNet
from .rollout import RolloutWorker, make_buffers, per_game_keys, shard_state


class WorkerError(RuntimeError):
    """A rollout worker died or failed: the run stops after saving its last completed update."""


def shards(num_games: int, workers: int) -> list[tuple[int, int]]:
    """Return the (lo, hi) game ranges of ``workers`` near-equal shards of ``num_games`` games."""
    cuts = [num_games * k // workers for k in range(workers + 1)]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


BufferSet = dict[str, torch.Tensor]
"""One set of rollout buffers (see ``rollout.make_buffers``)."""
Weights = tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None]
"""The (policy, critic or None) state dicts a rollout plays with."""


def _state_dicts(net: PolicyValueNet, critic: ValueNet | None) -> Weights:
    """Return CPU copies of the policy's and the critic's weights."""
    def cpu(m: torch.nn.Module) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu().clone() for k, v in m.state_dict().items()}
    return cpu(net), None if critic is None else cpu(critic)


class InProcess:
    """One rollout worker over every game, in the trainer's own process."""

    def __init__(self, cfg: Config, rules: Rules, state: dict[str, Any], buffers: list[BufferSet],
                 net: PolicyValueNet, critic: ValueNet | None):
        """Start the worker; it plays with ``net``/``critic`` themselves when they are on the CPU."""
        self.shared = next(net.parameters()).device.type == "cpu"
        self.worker = RolloutWorker(cfg, rules, 0, 0, cfg.num_envs, state, buffers[0],
                                    net if self.shared else None, critic if self.shared else None)
        self.net, self.critic, self.buffers = net, critic, buffers
        self.result: dict[str, Any] | None = None

    def set_snapshot(self, slot: int, weights: dict[str, torch.Tensor]) -> None:
        """Put ``weights`` into league slot ``slot``; return None."""
        self.worker.set_snapshot(slot, weights)

    def start(self, update: int, bufset: int = 0, weights: Weights | None = None) -> None:
        """Play rollout ``update`` into buffer set ``bufset`` (here, at once) with ``weights`` (None: the
        learner's current ones); return None."""
        if weights is not None and self.shared:
            raise ValueError("the in-process worker plays the learner's own network: no other weights")
        if not self.shared:
            self.worker.set_weights(*(_state_dicts(self.net, self.critic) if weights is None else weights))
        self.worker.use_buffers(self.buffers[bufset])
        self.result = self.worker.rollout(update)

    def finish(self) -> list[dict[str, Any]]:
        """Return [the worker's result] of the rollout started last."""
        res, self.result = self.result, None
        return [res]

    def rollout(self, update: int) -> list[dict[str, Any]]:
        """Play rollout ``update`` with the learner's current weights; return [the worker's result]."""
        self.start(update)
        return self.finish()

    def close(self) -> None:
        """Nothing to release; return None."""


def _serve(conn: Any, inherited: list[Any], cfg: Config, rules: Rules, index: int, lo: int, hi: int,
           state: dict[str, Any], buffers: list[dict[str, torch.Tensor]],
           weights: dict[str, dict[str, torch.Tensor] | None]) -> None:
    """Worker-process loop: answer the trainer's commands until told to close, or the trainer is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for c in inherited:  # the trainer's pipe ends, copied by fork: closed, so a dead trainer means EOF
        c.close()
    trainer = os.getppid()
    torch.set_num_threads(1)
    try:
        sets = [{k: v[:, lo:hi] for k, v in b.items()} for b in buffers]
        worker = RolloutWorker(cfg, rules, index, lo, hi, state, sets[0])
        while True:
            while not conn.poll(1.0):
                if os.getppid() != trainer:  # orphaned: the trainer died without closing us
                    return
            msg = conn.recv()
            if msg[0] == "rollout":
                worker.set_weights(weights["net"], weights["critic"])
                worker.use_buffers(sets[msg[2]])
                res = worker.rollout(msg[1])
                conn.send(("ok", res))
            elif msg[0] == "snapshot":
                worker.set_snapshot(msg[1], msg[2])
            else:
                return
    except (EOFError, OSError, KeyboardInterrupt):
        return
    except Exception as e:  # reported to the trainer, which stops the run with one line
        try:
            conn.send(("error", f"{type(e).__name__}: {e}"))
        except OSError:
            pass


class LocalProcesses:
    """K forked worker processes sharing the rollout buffers and the weights through shared memory."""

    def __init__(self, cfg: Config, rules: Rules, state: dict[str, Any], buffers: list[BufferSet],
                 net: PolicyValueNet, critic: ValueNet | None):
        """Fork the workers, each with its shard of ``state``; ``buffers`` must be in shared memory."""
        self.net, self.critic = net, critic
        net_sd, critic_sd = _state_dicts(net, critic)
        self.weights = {"net": {k: v.share_memory_() for k, v in net_sd.items()},
                        "critic": None if critic_sd is None else {k: v.share_memory_()
                                                                  for k, v in critic_sd.items()}}
        ctx = mp.get_context("fork")
        keys = per_game_keys(cfg, rules)
        self.procs: list[Any] = []
        self.conns: list[Any] = []
        try:
            for k, (lo, hi) in enumerate(shards(cfg.num_envs, cfg.workers)):
                parent, child = ctx.Pipe()
                p = ctx.Process(target=_serve, name=f"escoba-rollout-{k}", daemon=True,
                                args=(child, [*self.conns, parent], cfg, rules, k, lo, hi,
                                      shard_state(state, keys, lo, hi), buffers, self.weights))
                p.start()
                child.close()
                self.procs.append(p)
                self.conns.append(parent)
        except BaseException:
            self.close()
            raise

    def _send(self, k: int, msg: tuple) -> None:
        try:
            self.conns[k].send(msg)
        except OSError as e:
            raise self._died(k) from e

    def _died(self, k: int) -> WorkerError:
        p = self.procs[k]
        p.join(timeout=1.0)
        return WorkerError(f"rollout worker {k} (pid {p.pid}) died (exit code {p.exitcode})")

    def set_snapshot(self, slot: int, weights: dict[str, torch.Tensor]) -> None:
        """Send ``weights`` to every worker's league slot ``slot``; return None."""
        for k in range(len(self.procs)):
            self._send(k, ("snapshot", slot, weights))

    def start(self, update: int, bufset: int = 0, weights: Weights | None = None) -> None:
        """Publish ``weights`` (None: the learner's current ones) and start rollout ``update`` into buffer
        set ``bufset`` on every worker; return None at once."""
        given = dict(zip(("net", "critic"), weights, strict=True)) if weights is not None else None
        for name, m in (("net", self.net), ("critic", self.critic)):
            if m is not None:
                sd = m.state_dict() if given is None else given[name]
                for key, v in sd.items():
                    self.weights[name][key].copy_(v)
        for k in range(len(self.procs)):
            self._send(k, ("rollout", update, bufset))

    def rollout(self, update: int) -> list[dict[str, Any]]:
        """Publish the weights, run rollout ``update`` on every worker; return their results in order."""
        self.start(update)
        return self.finish()

    def finish(self) -> list[dict[str, Any]]:
        """Wait for the rollout started last; return the workers' results in order (``WorkerError`` if
        one died or failed)."""
        out = []
        for k, conn in enumerate(self.conns):
            while not conn.poll(0.2):
                if not self.procs[k].is_alive():
                    raise self._died(k)
            try:
                msg = conn.recv()
            except (EOFError, OSError) as e:
                raise self._died(k) from e
            if msg[0] != "ok":
                raise WorkerError(f"rollout worker {k} failed: {msg[1]}")
            out.append(msg[1])
        return out

    def close(self) -> None:
        """Stop every worker (politely, then by force after a second); return None."""
        for conn in self.conns:
            try:
                conn.send(("close",))
            except OSError:
                pass
        for p in self.procs:
            p.join(timeout=1.0)
            if p.is_alive():
                p.kill()
                p.join(timeout=1.0)
        for conn in self.conns:
            conn.close()
        self.procs, self.conns = [], []


class RayRolloutActor:
    """A ``RolloutWorker`` with its own buffers, run as a Ray actor (see ``RayActors``)."""

    def __init__(self, cfg: Config, rules: Rules, index: int, lo: int, hi: int, state: dict[str, Any],
                 num_features: int):
        """Build the worker over games ``lo..hi-1`` from their ``state``."""
        torch.set_num_threads(1)
        self.worker = RolloutWorker(cfg, rules, index, lo, hi, state,
                                    make_buffers(cfg, rules, num_features, hi - lo))

    def set_snapshot(self, slot: int, weights: dict[str, torch.Tensor]) -> None:
        """Put ``weights`` into league slot ``slot``; return None."""
        self.worker.set_snapshot(slot, weights)

    def rollout(self, update: int, weights: Weights, bufset: int = 0) -> tuple[dict[str, Any], dict]:
        """Run rollout ``update`` with ``weights``; return (its result, the shard's buffers as arrays).

        One set of buffers is enough here whatever ``bufset``: Ray copies the returned arrays into its
        object store when the call returns, and the trainer copies them into its set ``bufset``."""
        self.worker.set_weights(*weights)
        res = self.worker.rollout(update)
        return res, self.worker.np


def _ray() -> Any:
    try:
        import ray  # the [ray] extra
    except ImportError as e:
        raise ValueError("--backend ray needs Ray: pip install 'escoba-env[ray]'") from e
    return ray


class RayActors:
    """K Ray actors, each a ``RayRolloutActor`` over one shard of the games."""

    def __init__(self, cfg: Config, rules: Rules, state: dict[str, Any], buffers: list[BufferSet],
                 net: PolicyValueNet, critic: ValueNet | None):
        """Connect to ``cfg.ray_address`` (or start a private local instance) and start the actors."""
        ray = _ray()
        self.ray, self.net, self.critic, self.started = ray, net, critic, False
        if not ray.is_initialized():
            if cfg.ray_address:
                join(ray, cfg.ray_address)
            else:
                # the processes Ray starts inherit this environment: they import this package from
                # where the trainer found it, and bind to 127.0.0.1 (see _local_only)
                saved = dict(os.environ)
                root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
                path = os.environ.get("PYTHONPATH", "")
                os.environ["PYTHONPATH"] = root + (os.pathsep + path if path else "")
                try:
                    with loopback_only():
                        ray.init(num_cpus=cfg.workers, include_dashboard=False, log_to_driver=False,
                                 _node_ip_address="127.0.0.1")
                finally:
                    os.environ.clear()
                    os.environ.update(saved)
            self.started = True
        self.np = [{k: v.numpy() for k, v in b.items()} for b in buffers]
        self.refs: list[Any] = []
        self.bufset = 0
        self.bounds = shards(cfg.num_envs, cfg.workers)
        actor = ray.remote(num_cpus=1, max_restarts=0)(RayRolloutActor)
        keys = per_game_keys(cfg, rules)
        nf = buffers[0]["feat"].shape[-1]
        self.actors = [actor.remote(cfg, rules, k, lo, hi, shard_state(state, keys, lo, hi), nf)
                       for k, (lo, hi) in enumerate(self.bounds)]

    def _get(self, refs: list[Any]) -> list[Any]:
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayActorError as e:
            raise WorkerError(f"a Ray rollout actor died: {str(e).splitlines()[0] if str(e) else e}") from e
        except self.ray.exceptions.RayTaskError as e:
            raise WorkerError(f"a Ray rollout actor failed: {type(e.cause).__name__}: {e.cause}") from e
        except self.ray.exceptions.RayError as e:  # any other: a lost node, object or owner
            first = str(e).splitlines()[0] if str(e) else ""
            raise WorkerError(f"Ray lost a rollout actor or its data ({type(e).__name__}): {first}") from e

    def set_snapshot(self, slot: int, weights: dict[str, torch.Tensor]) -> None:
        """Send ``weights`` to every actor's league slot ``slot``; return None."""
        ref = self.ray.put(weights)
        self._get([a.set_snapshot.remote(slot, ref) for a in self.actors])

    def start(self, update: int, bufset: int = 0, weights: Weights | None = None) -> None:
        """Start rollout ``update`` on every actor with ``weights`` (None: the learner's current ones),
        for buffer set ``bufset``; return None at once."""
        ref = self.ray.put(_state_dicts(self.net, self.critic) if weights is None else weights)
        self.refs = [a.rollout.remote(update, ref, bufset) for a in self.actors]
        self.bufset = bufset

    def finish(self) -> list[dict[str, Any]]:
        """Wait for the rollout started last, copy the actors' buffers in; return their results in order."""
        refs, self.refs = self.refs, []
        got = self._get(refs)
        for (_, arrays), (lo, hi) in zip(got, self.bounds, strict=True):
            for key, arr in arrays.items():
                self.np[self.bufset][key][:, lo:hi] = arr
        return [res for res, _ in got]

    def rollout(self, update: int) -> list[dict[str, Any]]:
        """Run rollout ``update`` on every actor, copy their buffers in; return their results in order."""
        self.start(update)
        return self.finish()

    def close(self) -> None:
        """Stop the actors, and the local Ray instance if this started it; return None."""
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001, S110 - already gone
                pass
        self.actors = []
        if self.started:
            leave(self.ray)
            self.started = False


def start_workers(cfg: Config, rules: Rules, state: dict[str, Any], buffers: list[BufferSet],
                  net: PolicyValueNet, critic: ValueNet | None) -> InProcess | LocalProcesses | RayActors:
    """Return the rollout workers ``cfg`` asks for, started on ``state`` (the whole run's games), writing
    into the buffer sets ``buffers``."""
    if cfg.workers == 1 and cfg.backend == "local" and not cfg.overlap:
        return InProcess(cfg, rules, state, buffers, net, critic)
    if cfg.backend == "ray":
        return RayActors(cfg, rules, state, buffers, net, critic)
    return LocalProcesses(cfg, rules, state, buffers, net, critic)


def buffers_for(cfg: Config, rules: Rules, num_features: int) -> dict[str, torch.Tensor]:
    """Return the trainer's rollout buffers, in shared memory when local worker processes write them."""
    return make_buffers(cfg, rules, num_features, cfg.num_envs,
                        shared=cfg.backend == "local" and (cfg.workers > 1 or cfg.overlap))
