"""``--device cuda``: training, resuming and playing on a GPU (skipped where torch sees none).

CI has no GPU, so these run only on a machine with one (the project ran them on an H200; see
README "Training on a GPU"). Each checks a GPU result against the CPU, not a timing.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from agents.heuristic.expert import ExpertAgent
from agents.nets.neural import NeuralAgent, load_checkpoint
from agents.spec.registry import make_agent
from agents.tournament.duplicate import play_duplicate
from agents.training import Config, Trainer, export_agent, train
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

TINY = dict(num_envs=32, num_steps=16, hidden=(32,), total_steps=32 * 16 * 4, eval_interval=1024,
            eval_deals=16, snapshot_interval=512, save_interval=1024, opp_self=0.4, opp_snapshot=0.2,
            opp_greedy=0.2, opp_expert=0.2, progress=False, seed=3, device="cuda")


def _observations(n: int = 64):
    """Return (obs, masks) of the seats to act in ``n`` fresh games."""
    e = EscobaEngine(n, Rules(), single_round=True)
    e.reset(seed=9)
    return encode(e, e.to_act), action_masks(e, e.to_act)


@pytest.mark.parametrize("endgame", [False, True])
def test_cuda_run_trains_resumes_exactly_and_plays_on_cpu_and_gpu(tmp_path, endgame):
    cfg = Config(**TINY, runs_dir=str(tmp_path), run_name="full", endgame_features=endgame)
    summary = train(cfg)
    assert summary["global_step"] == 2048
    ckpt = load_checkpoint(summary["checkpoint"])
    # resume on the GPU continues to the same weights
    half = Config(**TINY, runs_dir=str(tmp_path), run_name="half", endgame_features=endgame)
    train(half, max_updates=2)
    t = Trainer(Config(resume=os.path.join(tmp_path, "half", "checkpoints", "latest.pt")))
    assert t.device.type == "cuda"
    t.run()
    resumed = load_checkpoint(os.path.join(tmp_path, "half", "checkpoints", "latest.pt"))
    for k, v in ckpt["model"].items():
        torch.testing.assert_close(v, resumed["model"][k], rtol=1e-5, atol=1e-6)
    # the exported agent plays the same on both devices
    out = export_agent(summary["checkpoint"], str(tmp_path / "agent.pt"))
    obs, mask = _observations()
    gpu = NeuralAgent.from_checkpoint(out, device="cuda")
    cpu = NeuralAgent.from_checkpoint(out, device="cpu")
    assert next(gpu.net.parameters()).device.type == "cuda"
    np.testing.assert_array_equal(gpu.act_batch(obs, mask), cpu.act_batch(obs, mask))
    spec = make_agent(f"checkpoint:{out},device=cuda", rules=Rules())
    res = play_duplicate([spec, ExpertAgent()], deals=8, seed=0)
    assert res.rounds == 16
