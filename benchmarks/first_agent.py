"""What learns, how fast: learning curves against wall time of SB3 MaskablePPO, the CleanRL example and
escoba-train, each trained for a fixed wall-clock budget on one process.

Every method trains with the settings of ``docs/first_agent.md`` and is evaluated at regular points
of its training (evaluation time is not counted as training time):

- ``sb3``: sb3-contrib ``MaskablePPO`` on ``escoba_env.faces.sb3.make_vec_env`` (64 games against
  ``greedy``, one-round episodes, ``reward="round_points"``, ``gamma=1``, learning rate 5e-4, entropy
  coefficient 0.001) with
  ``sb3_card_policy()``: ``"MultiInputPolicy"`` with the CleanRL example's card features and card head;
  evaluated greedily (the argmax of the masked policy) on 2048 one-round games against ``random`` and
  against ``greedy``;
- ``cleanrl``: ``examples/cleanrl_ppo.py`` with ``card_features=True`` (64 games against ``greedy``,
  one-round episodes, ``gamma=1``, learning rate 5e-4, entropy coefficient 0.001, 256 hidden units),
  evaluated the same way;
- ``train``: ``escoba-train`` (self-play with its league), whose own duplicate evaluation against
  ``greedy`` is read from the run's ``metrics.csv``.

The y axis is points per round, the learner's minus the opponent's (0: as strong as the opponent).
Writes ``--out`` (a JSON of every point) and a PNG beside it.

    nice python benchmarks/first_agent.py --seconds 300 --out docs/measurements/first_agent.json
    nice python benchmarks/first_agent.py --seconds 60 --methods sb3 cleanrl   # a quick look
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout

import gymnasium  # noqa: E402

import escoba_env  # noqa: E402,F401
from escoba_env.faces.cli import OneLineParser, guarded_main, positive_float, positive_int  # noqa: E402

METHODS = ("sb3", "cleanrl", "train")
EVAL_ROUNDS = 2048


def evaluate(policy: Callable[[np.ndarray, np.ndarray], np.ndarray], opponent: str, rounds: int = EVAL_ROUNDS,
             seed: int = 12345, se: bool = False) -> float | tuple[float, float]:
    """Return the mean points per round (learner minus opponent) of ``policy`` over ``rounds`` rounds,
    and with ``se`` its standard error too.

    ``policy(observations (N, obs), masks bool (N, W))`` returns N actions.
    """
    envs = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=64, vectorization_mode="vector_entry_point",
                              opponents=opponent, episode="round", reward="round_points",
                              autoreset_mode="SameStep", seat=None)
    obs, _ = envs.reset(seed=seed)
    points: list[float] = []
    while len(points) < rounds:
        obs, reward, term, trunc, _ = envs.step(policy(obs["observation"], obs["action_mask"] > 0))
        points.extend(reward[term | trunc].tolist())
    mean = float(np.mean(points))
    return (mean, float(np.std(points, ddof=1) / np.sqrt(len(points)))) if se else mean


class Clock:
    """Training wall time: runs while training, paused while evaluating."""

    def __init__(self):
        self.spent, self.since = 0.0, time.perf_counter()

    def pause(self) -> float:
        """Stop counting; return the training seconds so far."""
        self.spent += time.perf_counter() - self.since
        return self.spent

    def resume(self) -> None:
        """Count again."""
        self.since = time.perf_counter()


def sb3_card_policy():
    """Return sb3-contrib's Dict-observation masked policy with the CleanRL example's card head.

    Its features extractor reads ``obs["observation"]``, adds ``examples/cleanrl_ppo.py``'s
    ``card_features``, and returns each card's score from one small network shared by the 40 cards
    followed by a 256-wide ReLU body; the action net adds the scores to a linear map of the body.
    """
    import torch
    from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from torch import nn

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import cleanrl_ppo

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


def run_sb3(seconds: float, points: int, seed: int) -> list[dict]:
    """Train MaskablePPO for ``seconds`` of training time; return the evaluation points."""
    from sb3_contrib import MaskablePPO

    from escoba_env.faces.sb3 import make_vec_env

    env = make_vec_env(64, opponents="greedy", reward="round_points", episode="round", seat=None)
    model = MaskablePPO(sb3_card_policy(), env, n_steps=64, batch_size=1024, n_epochs=4, learning_rate=5e-4,
                        gamma=1.0, ent_coef=0.001, seed=seed, verbose=0, device="cpu")

    def policy(obs, masks):
        dummy = {"observation": obs, "action_mask": masks.astype(np.int8)}
        return model.predict(dummy, action_masks=masks, deterministic=True)[0]

    out, clock, chunk = [], Clock(), 64 * 64
    out.append(_point(0.0, 0, policy))
    clock.resume()
    while True:
        model.learn(chunk, reset_num_timesteps=False)
        spent = clock.pause()
        if spent >= seconds * len(out) / points or spent >= seconds:
            out.append(_point(spent, model.num_timesteps, policy))
            if spent >= seconds:
                return out
        clock.resume()


def run_cleanrl(seconds: float, points: int, seed: int) -> list[dict]:
    """Train the CleanRL example for ``seconds`` of training time; return the evaluation points."""
    import torch

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import cleanrl_ppo

    out, clock = [], Clock()

    class Stop(Exception):
        """Raised from the callback when the budget is spent."""

    def policy_of(agent):
        def policy(obs, masks):
            with torch.no_grad():
                x = cleanrl_ppo.network_input(obs, True)
                logits = agent.actor(agent.body(x), x)
                return logits.masked_fill(~torch.as_tensor(masks), -1e9).argmax(1).numpy()
        return policy

    def callback(agent, steps):
        spent = clock.pause()
        if spent >= seconds * len(out) / points or spent >= seconds:
            out.append(_point(spent, steps, policy_of(agent)))
            if spent >= seconds:
                raise Stop
        clock.resume()

    torch.manual_seed(seed)
    size = 546 + 40 * cleanrl_ppo.CARD_FEATURES + 1
    agent = cleanrl_ppo.Agent(size, 40, 256, card_head=True, activation=torch.nn.ReLU)
    out.append(_point(0.0, 0, policy_of(agent)))
    clock.resume()
    try:
        cleanrl_ppo.train(num_envs=64, num_steps=64, iterations=10**9, opponents="greedy", seed=seed,
                          episode="round", gamma=1.0, lr=5e-4, ent_coef=0.001, hidden=256, card_features=True,
                          callback=callback)
    except Stop:
        pass
    return out


def run_train(seconds: float, points: int, seed: int) -> list[dict]:
    """Run escoba-train for ``seconds`` of wall time (evaluations included); return its evaluations."""
    import signal
    import subprocess

    from agents.training.curve import read_evals

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, os.path.join(ROOT, "train.py"), "--runs-dir", tmp, "--run-name", "first",
               "--num-envs", "64", "--num-steps", "32", "--workers", "1", "--threads", "1",
               "--episode", "round",
               "--eval-opponents", "greedy", "--eval-deals", "64", "--eval-interval", str(64 * 32 * 4),
               "--total-steps", str(10**9), "--no-progress", "--no-tensorboard", "--seed", str(seed)]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": ROOT})
        try:
            p.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=120)
        evals = read_evals(os.path.join(tmp, "first", "metrics.csv")).get("greedy")
    if not evals:
        return []
    return [{"seconds": w, "steps": s, "vs_greedy": m}
            for w, s, m in zip(evals["wall_s"], evals["step"], evals["mean"], strict=True)]


def _point(spent: float, steps: int, policy) -> dict:
    (r, r_se), (g, g_se) = evaluate(policy, "random", se=True), evaluate(policy, "greedy", se=True)
    return {"seconds": round(spent, 1), "steps": int(steps), "vs_random": r, "vs_random_se": r_se,
            "vs_greedy": g, "vs_greedy_se": g_se}


def plot(results: dict[str, list[dict]], out: str, note: str) -> None:
    """Draw points per round against training minutes, one panel per opponent, into ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=110, sharey=True)
    for ax, opp in zip(axes, ("random", "greedy"), strict=True):
        for name, pts in results.items():
            xs = [p["seconds"] / 60 for p in pts if f"vs_{opp}" in p]
            ys = [p[f"vs_{opp}"] for p in pts if f"vs_{opp}" in p]
            if xs:
                ax.plot(xs, ys, marker="o", ms=3, label=name)
        ax.axhline(0.0, color="black", lw=0.8)
        ax.set_title(f"against {opp}")
        ax.set_xlabel("training wall time (minutes)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("points per round, learner minus opponent")
    axes[1].legend(loc="lower right")
    fig.suptitle(note, fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    """Train each method for the budget, evaluate along the way, write the JSON and the PNG."""
    ap = OneLineParser(prog="first_agent.py", description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=positive_float, default=300.0, help="training wall time per method")
    ap.add_argument("--points", type=positive_int, default=6, help="evaluations per method after the start")
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "measurements", "first_agent.json"))
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    load = os.getloadavg()
    runners = {"sb3": run_sb3, "cleanrl": run_cleanrl, "train": run_train}
    results = {m: runners[m](args.seconds, args.points, args.seed) for m in args.methods}
    note = (f"{args.seconds:.0f} s of training per method, one process; load average at the start "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (os.getloadavg)")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        command = "python benchmarks/first_agent.py " + " ".join(argv or sys.argv[1:])
        json.dump({"command": command, "note": note, "results": results}, f, indent=1)
    png = os.path.splitext(args.out)[0] + ".png"
    plot(results, png, note)
    print(f"wrote {args.out} and {png}")
    for name, pts in results.items():
        print(name, [(p["seconds"], round(p.get("vs_random", float("nan")), 3), round(p["vs_greedy"], 3))
                     for p in pts])


if __name__ == "__main__":
    raise SystemExit(guarded_main("first_agent.py", main))
