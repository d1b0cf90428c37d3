"""escoba_env.faces.rllib: RLlib's own action-masking PPO example runs on it, multi-agent and single-agent."""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_local():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def test_observations_carry_rllib_masking_keys():
    from escoba_env.faces.rllib import EscobaMultiAgentEnv, EscobaSingleAgentEnv

    ma = EscobaMultiAgentEnv({"episode": "round"})
    obs, _ = ma.reset(seed=0)
    (agent, o), = obs.items()  # turn-based: only the seat to act observes
    assert agent in ("player_0", "player_1") and set(o) == {"observations", "action_mask"}
    assert ma.observation_spaces[agent].contains(o) and o["action_mask"].any()
    sa = EscobaSingleAgentEnv({"opponents": "random", "episode": "round"})
    o, _ = sa.reset(seed=0)
    assert set(o) == {"observations", "action_mask"} and sa.observation_space.contains(o)
    o, *_ = sa.step(int(np.flatnonzero(o["action_mask"])[0]))
    assert sa.observation_space.contains(o)


def _masking_ppo(env, env_config, multi_agent: bool):
    """RLlib's action_masking_rl_module example config, as small as it goes."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    spec = RLModuleSpec(module_class=ActionMaskingTorchRLModule,
                        model_config={"head_fcnet_hiddens": [16], "fcnet_hiddens": [16]})
    config = (PPOConfig().environment(env, env_config=env_config, disable_env_checking=True)
              .env_runners(num_env_runners=0)
              .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1))
    if multi_agent:
        config = (config.multi_agent(policies={"shared"}, policy_mapping_fn=lambda aid, *a, **k: "shared")
                  .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={"shared": spec})))
    else:
        config = config.rl_module(rl_module_spec=spec)
    return config.build_algo()


def test_rllib_masking_example_one_iteration_multi_and_single_agent(ray_local, capfd):
    from escoba_env.faces.rllib import EscobaMultiAgentEnv, EscobaSingleAgentEnv

    algo = _masking_ppo(EscobaMultiAgentEnv, {"episode": "round", "reward": "round_points"}, True)
    result = algo.train()
    algo.stop()
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled_lifetime"] >= 64
    per_seat = runners["agent_episode_returns_mean"]
    assert set(per_seat) == {"player_0", "player_1"}
    # zero-sum with two sides: the seats' returns cancel, and RLlib's episode_return_mean is their sum
    assert per_seat["player_0"] == pytest.approx(-per_seat["player_1"])
    assert runners["episode_return_mean"] == pytest.approx(0.0)

    algo = _masking_ppo(EscobaSingleAgentEnv, {"opponents": "random", "episode": "round"}, False)
    result = algo.train()
    algo.stop()
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 64
    out, err = capfd.readouterr()
    assert "Illegal move" not in out + err  # the mask kept every sampled action legal


def test_the_multi_agent_env_honours_the_reset_seed():
    """Fails with EscobaMultiAgentEnv.reset dropping ``seed`` (each reset a fresh random deal)."""
    from escoba_env import escoba_v0
    from escoba_env.faces.rllib import EscobaMultiAgentEnv

    ma = EscobaMultiAgentEnv({"episode": "round"})
    first = ma.reset(seed=11)[0]
    again = ma.reset(seed=11)[0]
    other = ma.reset(seed=12)[0]
    (agent, o), = first.items()
    assert set(again) == {agent}
    np.testing.assert_array_equal(again[agent]["observations"], o["observations"])
    ref = escoba_v0.env(episode="round")
    ref.reset(seed=11)
    np.testing.assert_array_equal(ref.observe(agent)["observation"], o["observations"])
    assert any(not np.array_equal(v["observations"], o["observations"]) for v in other.values())


def test_rllibs_env_checker_steps_only_legal_actions():
    """Fails with plain Discrete action spaces: the checker's ``sample()`` played an illegal card in
    most checks ("Illegal move made", the game terminated at its first step)."""
    import pickle

    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    from escoba_env.faces.rllib import EscobaMultiAgentEnv

    env = EscobaMultiAgentEnv({"episode": "round"})
    step, played = env.step, []

    def legal_step(action):
        for agent, a in action.items():
            played.append(bool(env.env.observe(agent)["action_mask"][a]))
        return step(action)

    env.step = legal_step
    for _ in range(20):
        check_multiagent_environments(env)  # reset(seed=42) and one step of a sampled action
    assert len(played) == 20 and all(played), "the checker's sampled action was illegal"
    assert type(pickle.loads(pickle.dumps(env.action_spaces["player_0"]))).__name__ == "Discrete"
