"""PPO self-play training: smoke run, exact resume, masked sampling, GAE, checkpoints, CLI."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import torch

from agents.heuristic.greedy import GreedyAgent
from agents.nets.neural import NeuralAgent, PolicyValueNet, load_checkpoint, sample_masked, save_checkpoint
from agents.tournament.duplicate import play_duplicate
from agents.training import Config, Trainer, compute_gae, config_from_args, export_agent, train
from escoba_env import EscobaEngine, EscobaVectorEnv, Rules
from escoba_env.executors.observation import OBS_SIZE, action_masks, encode

TINY = dict(num_envs=32, num_steps=16, hidden=(32,), total_steps=32 * 16 * 4, eval_interval=1024,
            eval_deals=16, snapshot_interval=512, save_interval=1024, opp_self=0.4, opp_snapshot=0.2,
            opp_greedy=0.2, opp_expert=0.2, progress=False, seed=3)


def tiny(tmp_path, name: str = "run", **kw) -> Config:
    """Return the tiny deterministic config used by these tests, writing under ``tmp_path``."""
    return Config(**{**TINY, "runs_dir": str(tmp_path), "run_name": name, **kw})


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Train the tiny config once: return (config, summary)."""
    cfg = tiny(tmp_path_factory.mktemp("runs"))
    return cfg, train(cfg)


def test_smoke_run_trains_logs_checkpoints_and_evaluates(trained):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg, summary = trained
    run = os.path.join(cfg.runs_dir, cfg.run_name)
    assert summary["global_step"] == 2048 and summary["updates"] == 4
    assert os.path.isfile(summary["checkpoint"])
    assert set(summary["eval"]) == {"greedy", "expert"}
    rows = np.genfromtxt(os.path.join(run, "metrics.csv"), delimiter=",", names=True, dtype=None,
                         encoding="utf-8")
    tags = set(rows["tag"])
    expected = {"charts/sps", "charts/ups", "charts/learning_rate", "charts/episodes",
                "charts/return_vs_greedy", "losses/policy_loss", "losses/value_loss", "losses/entropy",
                "losses/approx_kl", "losses/explained_variance", "eval/vs_greedy", "eval/vs_greedy_lo",
                "eval/vs_greedy_hi", "eval/vs_expert", "eval/vs_expert_lo", "eval/vs_expert_hi"}
    assert expected <= tags
    # evaluations at steps 0, 1024 and 2048
    assert sorted(rows["step"][rows["tag"] == "eval/vs_expert"]) == [0, 1024, 2048]
    acc = EventAccumulator(run)
    acc.Reload()
    assert expected <= set(acc.Tags()["scalars"])
    assert [e.step for e in acc.Scalars("losses/value_loss")] == [512, 1024, 1536, 2048]
    ckpt = load_checkpoint(summary["checkpoint"])
    assert ckpt["global_step"] == 2048 and ckpt["update"] == 4
    assert ckpt["rules"] == Rules().to_dict() and tuple(ckpt["config"]["hidden"]) == (32,)
    assert {"optimizer", "rng", "league", "engine"} <= set(ckpt)


def test_resume_continues_exactly_as_an_uninterrupted_run(trained, tmp_path):
    cfg, _ = trained
    full = load_checkpoint(os.path.join(cfg.runs_dir, cfg.run_name, "checkpoints", "latest.pt"))
    half = tiny(tmp_path, "half")
    train(half, max_updates=2)
    path = os.path.join(tmp_path, "half", "checkpoints", "latest.pt")
    assert load_checkpoint(path)["global_step"] == 1024
    # resume + 0 steps: the restored trainer holds exactly the saved weights
    t = Trainer(Config(resume=path))
    saved = load_checkpoint(path)["model"]
    assert all(torch.equal(v, saved[k]) for k, v in t.net.state_dict().items())
    assert t.global_step == 1024 and t.cfg.hidden == (32,)
    summary = t.run()
    assert summary["global_step"] == 2048 and summary["updates"] == 4
    resumed = load_checkpoint(path)
    for k, v in full["model"].items():
        assert torch.equal(v, resumed["model"][k]), k
    assert [e["expert"] for e in resumed["evals"]] == [e["expert"] for e in full["evals"]]


def test_resume_overrides_only_the_given_fields(trained, tmp_path):
    cfg, _ = trained
    path = os.path.join(cfg.runs_dir, cfg.run_name, "checkpoints", "latest.pt")
    t = Trainer(Config(resume=path, total_steps=4096, runs_dir=str(tmp_path)))
    assert t.cfg.total_steps == 4096 and t.cfg.runs_dir == str(tmp_path)
    assert t.cfg.num_envs == 32 and t.cfg.hidden == (32,) and t.global_step == 2048


def test_loss_decreases_on_a_fixed_batch(tmp_path):
    t = Trainer(tiny(tmp_path, opp_self=1.0, opp_snapshot=0.0, opp_greedy=0.0, opp_expert=0.0))
    t.rollout()
    adv, ret = t.advantages()
    b = t.batch(adv, ret)
    with torch.no_grad():
        before, parts0 = t.loss(b, b.index)
    for _ in range(8):
        t.ppo_update(adv, ret)
    with torch.no_grad():
        after, parts1 = t.loss(b, b.index)
    assert float(after) < float(before)
    assert float(parts1["value_loss"]) < float(parts0["value_loss"])
    assert float(parts1["policy_loss"]) < float(parts0["policy_loss"])


def test_rollout_only_samples_legal_actions(tmp_path):
    t = Trainer(tiny(tmp_path, num_envs=64, num_steps=48))
    t.rollout()  # the env itself raises ValueError on an illegal action; check the stored ones too
    learner = torch.from_numpy(t.learner)
    chosen = t.buf_mask.gather(2, t.buf_act[:, :, None]).squeeze(2)
    assert learner.sum() > 0
    assert bool((chosen[learner] == 1).all())


def test_masked_sampling_never_picks_an_illegal_action():
    g = torch.Generator().manual_seed(0)
    mask = (torch.rand((2000, 40), generator=g) < 0.1).to(torch.int8)
    mask[torch.arange(2000), torch.randint(0, 40, (2000,), generator=g)] = 1  # >= 1 legal per row
    mask[:5] = 0
    mask[:5, 7] = 1  # rows with a single legal action
    logits = torch.randn((2000, 40), generator=g) * 20
    logits[:, 0] = 50.0  # a hugely preferred action, legal or not
    masked = logits.masked_fill(mask == 0, -1e9)
    for _ in range(20):
        u = torch.rand((2000, 40), generator=g)
        a = sample_masked(masked, u)
        assert bool((mask.gather(1, a[:, None]) == 1).all())
    assert (a[:5] == 7).all()
    u = torch.zeros((1, 40))  # extreme uniforms (0 -> Gumbel -inf) still give a legal action
    u[0, 3] = 1.0 - 2**-24
    assert sample_masked(masked[5:6], u).item() in np.flatnonzero(mask[5].numpy())


def test_league_learner_controls_exactly_its_side(tmp_path):
    t = Trainer(tiny(tmp_path, opp_self=0.0, opp_snapshot=0.0, opp_greedy=0.0, opp_expert=1.0))
    assert ((t.controller == 0).sum(axis=1) == 1).all()
    assert ((t.controller == 2).sum(axis=1) == 1).all()  # code 2: expert
    ctrl0 = t.controller.copy()
    t.rollout()
    # until its first game ends, each slot's transitions are exactly the decisions of the learner's seat
    first_done = np.where(t.dones.any(axis=0), t.dones.argmax(axis=0), t.cfg.num_steps)
    before = np.arange(t.cfg.num_steps)[:, None] <= first_done[None, :]
    expected = ctrl0[np.arange(t.n)[None, :], t.actor] == 0
    np.testing.assert_array_equal(t.learner[before], expected[before])
    assert 0 < t.learner[before].sum() < before.sum()


def test_gae_attributes_each_seats_rewards_to_its_own_decisions():
    # one game, seats 0,1,0,1; the game ends at step 3 paying (+2, -2); step 4 starts a new game
    rewards = np.zeros((5, 1, 2), np.float32)
    rewards[3, 0] = [2.0, -2.0]
    values = np.array([[0.1], [0.2], [0.3], [0.4], [0.5]], np.float32)
    actor = np.array([[0], [1], [0], [1], [0]])
    learner = np.ones((5, 1), bool)
    dones = np.array([[False], [False], [False], [True], [False]])
    boot = np.array([[0.7, 0.9]], np.float32)
    adv = compute_gae(rewards, values, actor, learner, dones, boot, gamma=1.0, lam=0.5)
    np.testing.assert_allclose(adv[:, 0], [1.05, -1.0, 1.7, -2.4, 0.2], rtol=0, atol=1e-6)
    adv1 = compute_gae(rewards, values, actor, learner, dones, boot, gamma=1.0, lam=1.0)
    np.testing.assert_allclose(adv1[:, 0] + values[:, 0], [2.0, -2.0, 2.0, -2.0, 0.7], rtol=0, atol=1e-6)
    # only seat 0 learns: seat 1's rows are zero, seat 0's unchanged
    only0 = compute_gae(rewards, values, actor, actor == 0, dones, boot, gamma=1.0, lam=0.5)
    np.testing.assert_allclose(only0[:, 0], [1.05, 0.0, 1.7, 0.0, 0.2], rtol=0, atol=1e-6)


def test_gae_bootstraps_a_truncated_game_from_its_final_values():
    rewards = np.zeros((5, 1, 2), np.float32)
    values = np.array([[0.1], [0.2], [0.3], [0.4], [0.5]], np.float32)
    actor = np.array([[0], [1], [0], [1], [0]])
    dones = np.array([[False], [False], [False], [True], [False]])
    trunc = {3: (np.array([0]), np.array([[1.0, -1.0]], np.float32))}
    adv = compute_gae(rewards, values, actor, np.ones((5, 1), bool), dones, np.zeros((1, 2)),
                      gamma=1.0, lam=1.0, trunc=trunc)
    np.testing.assert_allclose(adv[:, 0], [0.9, -1.2, 0.7, -1.4, -0.5], rtol=0, atol=1e-6)


def test_two_decisions_in_a_row_chain_through_the_same_seat():
    # seat 0 plays then names a table card (two decisions), seat 1 ends the round with (+1, -1)
    rewards = np.zeros((3, 1, 2), np.float32)
    rewards[2, 0] = [1.0, -1.0]
    values = np.array([[0.5], [0.25], [0.0]], np.float32)
    adv = compute_gae(rewards, values, np.array([[0], [0], [1]]), np.ones((3, 1), bool),
                      np.array([[False], [False], [True]]), np.zeros((1, 2)), gamma=1.0, lam=1.0)
    np.testing.assert_allclose(adv[:, 0], [0.5, 0.75, -1.0], rtol=0, atol=1e-6)


def _observations(n: int = 256, seed: int = 5):
    env = EscobaVectorEnv(n)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(int(rng.integers(3, 9))):
        from escoba_env.executors.engine import sample_actions

        obs, *_ = env.step(sample_actions(env.engine.legal, rng.random(n)))
    return obs["observation"].copy(), obs["action_mask"].copy()


def test_checkpoint_round_trip_acts_identically(trained, tmp_path):
    cfg, summary = trained
    ckpt = load_checkpoint(summary["checkpoint"])
    net = PolicyValueNet((32,), head="moves")
    net.load_state_dict(ckpt["model"])
    obs, mask = _observations()
    for det in (True, False):
        a = NeuralAgent(net, Rules(), seed=11, deterministic=det).act_batch(obs, mask)
        b = NeuralAgent.from_checkpoint(summary["checkpoint"], Rules(), seed=11,
                                        deterministic=det).act_batch(obs, mask)
        np.testing.assert_array_equal(a, b)
        assert (mask[np.arange(len(a)), a] == 1).all()
    # an exported play-only copy acts identically too, and plays a duplicate match
    out = export_agent(summary["checkpoint"], str(tmp_path / "agent.pt"))
    agent = NeuralAgent.from_checkpoint(out)
    np.testing.assert_array_equal(agent.act_batch(obs, mask),
                                  NeuralAgent(net, Rules()).act_batch(obs, mask))
    assert agent.rules == Rules() and agent.name == f"checkpoint:{out}"
    res = play_duplicate([agent, GreedyAgent()], deals=4, seed=0)
    assert res.rounds == 8
    assert os.path.getsize(out) < os.path.getsize(summary["checkpoint"])


def test_missing_checkpoint_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        NeuralAgent.from_checkpoint(tmp_path / "nope.pt")


def test_corrupt_checkpoint_raises_value_error(trained, tmp_path):
    _, summary = trained
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"this is not a checkpoint")
    with pytest.raises(ValueError, match="corrupt"):
        NeuralAgent.from_checkpoint(junk)
    data = open(summary["checkpoint"], "rb").read()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="corrupt"):
        NeuralAgent.from_checkpoint(cut)
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {"w": torch.zeros(3)}}, foreign)
    with pytest.raises(ValueError, match="not an escoba-env agent checkpoint"):
        NeuralAgent.from_checkpoint(foreign)


def test_incompatible_checkpoint_is_refused_with_the_difference(trained, tmp_path):
    _, summary = trained
    path = summary["checkpoint"]
    with pytest.raises(ValueError, match="num_players: trained 2, asked 3"):
        NeuralAgent.from_checkpoint(path, rules=Rules(num_players=3))
    with pytest.raises(ValueError, match="sevens_rule: trained 'most_sevens', asked 'primera'"):
        NeuralAgent.from_checkpoint(path, rules=Rules(sevens_rule="primera"))
    ckpt = load_checkpoint(path)
    small = tmp_path / "small_obs.pt"
    save_checkpoint(small, {**ckpt, "obs_size": 300})
    with pytest.raises(ValueError, match=f"observations of size 300.*has {OBS_SIZE}"):
        NeuralAgent.from_checkpoint(small)
    wrong = tmp_path / "wrong_shape.pt"
    save_checkpoint(wrong, {**ckpt, "net": {"hidden": [64]}})
    with pytest.raises(ValueError, match="do not fit"):
        NeuralAgent.from_checkpoint(wrong)
    exported = export_agent(path, str(tmp_path / "play_only.pt"))
    with pytest.raises(ValueError, match="no training state"):
        Trainer(Config(resume=exported))


def test_other_player_count_trains_and_evaluates(tmp_path):
    cfg = tiny(tmp_path, rules={"num_players": 3}, total_steps=32 * 16, eval_interval=512, eval_deals=4,
               tensorboard=False)
    summary = train(cfg)
    assert summary["global_step"] == 512
    agent = NeuralAgent.from_checkpoint(summary["checkpoint"], rules=Rules(num_players=3))
    assert agent.rules.num_players == 3
    with pytest.raises(ValueError, match="num_players: trained 3, asked 2"):
        NeuralAgent.from_checkpoint(summary["checkpoint"], rules=Rules())


def test_cli_flags_fill_the_config_and_pass_rules_through():
    cfg, given = config_from_args(["--players", "4", "--partnerships", "--hidden", "64", "64",
                                   "--no-anneal-lr", "--target-kl", "none", "--eval-opponents", "expert"])
    assert cfg.rules == {"num_players": 4, "partnerships": True}
    assert cfg.hidden == (64, 64) and cfg.anneal_lr is False and cfg.target_kl is None
    assert cfg.eval_opponents == ("expert",)
    assert given == ["anneal_lr", "eval_opponents", "hidden", "rules", "target_kl"]
    default, none = config_from_args([])
    assert default == Config() and none == []


def test_every_config_field_is_documented():
    from agents.training import field_docs

    docs = field_docs(Config)
    assert [f.name for f in dataclasses.fields(Config) if not docs.get(f.name)] == []


def test_shaping_sums_to_minus_the_initial_potential_over_an_episode(tmp_path):
    from agents.training import potential

    kw = dict(num_envs=16, num_steps=60, opp_self=1.0, opp_snapshot=0.0, opp_greedy=0.0, opp_expert=0.0)
    plain = Trainer(tiny(tmp_path, "plain", shaping=0.0, **kw))
    shaped = Trainer(tiny(tmp_path, "shaped", shaping=1.0, **kw))
    phi0 = potential(shaped.env.engine) * shaped.cfg.reward_scale
    plain.rollout()
    shaped.rollout()
    np.testing.assert_array_equal(plain.actor, shaped.actor)  # same seed, same weights: same games
    first = shaped.dones.argmax(axis=0)
    assert shaped.dones.any(axis=0).all()
    extra = shaped.rewards - plain.rewards
    upto = np.arange(60)[:, None] <= first[None, :]
    total = (extra * upto[:, :, None]).sum(axis=0)
    np.testing.assert_allclose(total, -phi0, atol=1e-5)
    assert np.abs(extra).max() > 0.05  # captures were credited during the round


def test_registry_checkpoint_spec_builds_the_neural_agent(trained):
    from agents.spec.registry import make_agent

    _, summary = trained
    path = summary["checkpoint"]
    agent = make_agent(f"checkpoint:{path}", rules=Rules(), seed=1)
    assert isinstance(agent, NeuralAgent) and agent.deterministic
    obs, mask = _observations(64)
    np.testing.assert_array_equal(agent.act_batch(obs, mask),
                                  NeuralAgent.from_checkpoint(path).act_batch(obs, mask))
    sampled = make_agent(f"checkpoint:{path},deterministic=false", rules=Rules(), seed=1)
    assert not sampled.deterministic
    with pytest.raises(ValueError, match="num_players: trained 2, asked 3"):
        make_agent(f"checkpoint:{path}", rules=Rules(num_players=3))


def test_plain_mlp_head_trains_and_round_trips(tmp_path):
    cfg = tiny(tmp_path, head="mlp", total_steps=32 * 16, eval_interval=0, tensorboard=False)
    summary = train(cfg)
    ckpt = load_checkpoint(summary["checkpoint"])
    assert ckpt["net"]["head"] == "mlp" and "move_linear.weight" not in ckpt["model"]
    net = PolicyValueNet((32,), head="mlp")
    net.load_state_dict(ckpt["model"])
    obs, mask = _observations(64)
    np.testing.assert_array_equal(NeuralAgent.from_checkpoint(summary["checkpoint"]).act_batch(obs, mask),
                                  NeuralAgent(net).act_batch(obs, mask))


def test_learning_curve_script_plots_the_eval_rows(trained, tmp_path):
    import csv
    import importlib.util

    cfg, _ = trained
    script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "plot_learning_curve.py")
    spec = importlib.util.spec_from_file_location("plot_learning_curve", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    metrics = os.path.join(cfg.runs_dir, cfg.run_name, "metrics.csv")
    png, kept = tmp_path / "curve.png", tmp_path / "evals.csv"
    mod.main(["--csv", metrics, "--out", str(png), "--keep-evals", str(kept)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(open(kept)))
    tags = {f"eval/vs_{n}{s}" for n in ("greedy", "expert") for s in ("", "_lo", "_hi")}
    assert {r["tag"] for r in rows} == tags
    evals = mod.read_evals(str(kept))
    assert evals["expert"]["step"] == [0, 1024, 2048]
    assert all(lo <= m <= hi for m, lo, hi in zip(evals["expert"]["mean"], evals["expert"]["lo"],
                                                  evals["expert"]["hi"], strict=True))
    # a continuation run is appended after the first run's last step and wall time
    both, start = mod.concatenate(evals, evals)
    assert both["expert"]["step"] == [0, 1024, 2048, 3072, 4096]
    assert start == evals["expert"]["wall_s"][-1]
    assert both["expert"]["wall_s"][3] == start + evals["expert"]["wall_s"][1]
    png2 = tmp_path / "both.png"
    mod.main(["--csv", str(kept), "--then", str(kept), "--out", str(png2)])
    assert png2.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name, endgame, steps", [("escoba_2p.pt", True, 40_042_496),
                                                   ("escoba_2p_plain.pt", False, 45_023_232)])
def test_shipped_agents_load_and_play_legal_moves(name, endgame, steps):
    path = os.path.join(os.path.dirname(__file__), "..", "..", "agents", "pretrained", name)
    agent = NeuralAgent.from_checkpoint(path, rules=Rules())
    assert agent.net.head == "moves" and agent.net.hidden == [128, 128] and agent.net.endgame == endgame
    assert load_checkpoint(path)["global_step"] == steps
    obs, mask = _observations(256, seed=9)
    actions = agent.act_batch(obs, mask)
    assert (mask[np.arange(256), actions] == 1).all()
    assert play_duplicate([agent, GreedyAgent()], deals=8, seed=4).rounds == 16


@pytest.mark.parametrize("rules", [{"jokers": 2}, {"jokers": 1, "mesa_deal": True},
                                   {"num_players": 4, "partnerships": True, "jokers": 2, "mesa_deal": True}])
def test_variants_train_with_the_grown_action_space_and_play_legally(tmp_path, rules):
    cfg = tiny(tmp_path, rules=rules, hidden=(16,), total_steps=32 * 16 * 2, eval_interval=0,
               tensorboard=False, opp_snapshot=0.0)
    t = Trainer(cfg)
    r = Rules(**rules)
    assert t.buf_mask.shape[-1] == r.num_cards and t.buf_obs.shape[-1] == 13 * r.num_cards + 26
    t.rollout()
    learner = torch.from_numpy(t.learner)
    chosen = t.buf_mask.gather(2, t.buf_act[:, :, None]).squeeze(2)
    assert bool((chosen[learner] == 1).all())
    path = t.save()
    agent = NeuralAgent.from_checkpoint(path, rules=r)
    assert agent.net.num_actions == r.num_cards
    res = play_duplicate([agent, GreedyAgent(r)], r, deals=4, seed=1)  # an illegal action would raise
    assert res.rounds == 4 * r.num_sides
    with pytest.raises(ValueError, match="jokers: trained"):
        NeuralAgent.from_checkpoint(path, rules=dataclasses.replace(r, jokers=0))


def test_move_features_of_jokers_score_a_joker_capture():
    from agents.nets.features import MOVE_FEATURES, move_features
    from escoba_env.executors.engine import EscobaEngine
    from escoba_env.executors.observation import encode
    from escoba_env.rulebook.cards import parse_card

    r = Rules(jokers=2)
    e = EscobaEngine(1, r)
    # seat 1 (after dealer 0) holds *1, 7o, 2c; the table 3e 4b Sc Rb: the joker can take Rb (as a 5)
    hands = [[parse_card(c) for c in ("1o", "1c", "1e")], [40, parse_card("7o"), parse_card("2c")]]
    table = [parse_card(c) for c in ("3e", "4b", "Sc", "Rb")]
    used = {c for h in hands for c in h} | set(table)
    stock = [c for c in range(42) if c not in used]
    e.reset(seed=0, dealer=0, hands=hands, table=table, stock=stock)
    f = move_features(encode(e, e.to_act), r)
    assert f.shape == (1, 42, len(MOVE_FEATURES))
    col = {k: i for i, k in enumerate(MOVE_FEATURES)}
    assert f[0, 40, col["play"]] == 1 and f[0, 40, col["capture"]] == 1
    assert f[0, 41, col["play"]] == 0  # the other joker is not in hand
    assert f[0, parse_card("2c"), col["capture"]] == 1  # 2c takes 3e + Rb (2 + 3 + 10)
    assert f[0, 40, col["escoba"]] == 0  # the table sums to 3 + 4 + 8 + 10 = 25: no sweep
    assert f[0, parse_card("7o"), col["capture"]] == 1  # 7o takes Sc (7 + 8)


def test_privileged_state_holds_the_other_hands_and_the_stock_order():
    from agents.training import privileged
    from escoba_env.executors.engine import EscobaEngine

    e = EscobaEngine(1, Rules(num_players=3))
    deck = list(range(40))  # hands: dealer 0 deals to 1, 2, 0: seat 1 gets 0, 3, 6; seat 2 1, 4, 7
    e.reset(seed=0, dealer=0, deck=deck)
    assert sorted(e.legal_actions()) == [0, 3, 6] and int(e.to_act[0]) == 1
    pr = privileged(e, np.array([1])).reshape(4, 40)
    assert list(np.flatnonzero(pr[0])) == [1, 4, 7]  # next seat (2)
    assert list(np.flatnonzero(pr[1])) == [2, 5, 8]  # the seat after (0, the dealer)
    assert not pr[2].any()  # no fourth seat
    # stock: deck positions 13.. (after 9 hand cards and 4 table cards), top = 1, then down by 1/40
    assert pr[3, 13] == 1.0 and pr[3, 14] == pytest.approx(1 - 1 / 40) and pr[3, :13].sum() == 0
    assert pr[3, 39] == pytest.approx(1 - 26 / 40)


def test_oracle_critic_trains_resumes_exactly_and_is_not_exported(tmp_path):
    kw = dict(critic="oracle", critic_hidden=(16,), eval_interval=0, tensorboard=False)
    full = train(tiny(tmp_path, "full", **kw))
    ck = load_checkpoint(full["checkpoint"])
    assert "critic" in ck and ck["critic"]["head.weight"].shape == (1, 16)
    train(tiny(tmp_path, "half", **kw), max_updates=2)
    half = Trainer(Config(resume=os.path.join(tmp_path, "half", "checkpoints", "latest.pt")))
    half.run()
    resumed = load_checkpoint(os.path.join(tmp_path, "half", "checkpoints", "latest.pt"))
    for k, v in ck["critic"].items():
        assert torch.equal(v, resumed["critic"][k]), k
    for k, v in ck["model"].items():
        assert torch.equal(v, resumed["model"][k]), k
    out = export_agent(full["checkpoint"], str(tmp_path / "agent.pt"))
    assert "critic" not in load_checkpoint(out)
    NeuralAgent.from_checkpoint(out)  # plays without its critic


def test_critic_warmup_leaves_the_policy_unchanged(tmp_path):
    t = Trainer(tiny(tmp_path, critic="oracle", critic_hidden=(16,), critic_warmup=1, eval_interval=0,
                     tensorboard=False))
    net0 = {k: v.clone() for k, v in t.net.state_dict().items()}
    critic0 = {k: v.clone() for k, v in t.critic.state_dict().items()}
    t.run(max_updates=1)
    assert all(torch.equal(v, net0[k]) for k, v in t.net.state_dict().items())
    assert not all(torch.equal(v, critic0[k]) for k, v in t.critic.state_dict().items())
    t.run(max_updates=1)  # warm-up over: the policy learns
    assert not all(torch.equal(v, net0[k]) for k, v in t.net.state_dict().items())


def test_nonlinear_moves_head_starts_at_the_torso_logits_trains_and_round_trips(tmp_path):
    from agents.nets.features import move_features

    net = PolicyValueNet((32,), head="moves_mlp", move_hidden=8)
    obs, mask = _observations(64)
    o, m = torch.from_numpy(obs), torch.from_numpy(mask)
    f = torch.from_numpy(move_features(obs))
    with torch.no_grad():  # the MLP's output layer starts at zero: only the torso's logits count
        logits, _ = net(o, m, f)
        base = net.policy(net.torso(o)).masked_fill(m == 0, -1e9)
    assert torch.equal(logits, base)
    with pytest.raises(ValueError, match="action-conditioned"):
        net(o, m)
    cfg = tiny(tmp_path, head="moves_mlp", total_steps=32 * 16, eval_interval=0, tensorboard=False)
    summary = train(cfg)
    ckpt = load_checkpoint(summary["checkpoint"])
    assert ckpt["net"]["head"] == "moves_mlp" and ckpt["net"]["move_hidden"] == 32
    assert ckpt["model"]["move_out.weight"].abs().sum() > 0  # it learnt
    agent = NeuralAgent.from_checkpoint(summary["checkpoint"])
    again = NeuralAgent.from_checkpoint(summary["checkpoint"])
    np.testing.assert_array_equal(agent.act_batch(obs, mask), again.act_batch(obs, mask))
    assert (mask[np.arange(64), agent.act_batch(obs, mask)] == 1).all()



def test_endgame_features_are_the_exact_values_and_a_trained_agent_round_trips(tmp_path):
    from agents.heuristic.endgame import endgame_rows, solve
    from agents.nets.features import ENDGAME_FEATURES, endgame_features

    rules = Rules()
    e = EscobaEngine(64, rules, single_round=True)
    e.reset(seed=12)
    greedy = GreedyAgent(rules)
    obs, masks = [], []
    while not e.done.all():  # positions all through the round, endgames included
        live = np.flatnonzero(~e.done)
        o, m = encode(e, e.to_act[live], live), action_masks(e, e.to_act[live], live)
        obs.append(o)
        masks.append(m)
        acts = np.zeros(e.num_games, np.int64)
        acts[live] = greedy.act_batch(o, m)
        e.step(acts)
    obs, masks = np.concatenate(obs), np.concatenate(masks)
    end = endgame_rows(obs, rules)
    assert 0 < end.sum() < len(obs)
    f = endgame_features(obs, rules)
    assert f.shape == (len(obs), 40, len(ENDGAME_FEATURES))
    assert (f[~end] == 0).all()  # nothing outside 2-player endgames
    v = solve(obs[end], rules)
    legal = np.isfinite(v)
    np.testing.assert_array_equal(legal, masks[end] > 0)
    best = np.nanmax(v, axis=1, keepdims=True)
    np.testing.assert_array_equal(f[end][..., 0], np.where(legal, v - best, 0))
    np.testing.assert_array_equal(f[end][..., 1], (legal & (v == best)).astype(np.float32))
    # a run with the features trains and saves; its exported agent reloads them and acts the same
    summary = train(tiny(tmp_path, "eg", endgame_features=True))
    out = export_agent(summary["checkpoint"], str(tmp_path / "eg.pt"))
    agent = NeuralAgent.from_checkpoint(out)
    assert agent.net.endgame and agent.net.net_config()["move_features"][-2:] == list(ENDGAME_FEATURES)
    trainer = Trainer(Config(resume=summary["checkpoint"]))
    np.testing.assert_array_equal(agent.act_batch(obs, masks),
                                  NeuralAgent(trainer.net, rules).act_batch(obs, masks))
    with pytest.raises(ValueError, match="other rules"):
        NeuralAgent.from_checkpoint(out, rules=Rules(num_players=3))
    with pytest.raises(ValueError, match="need the game's rules"):
        PolicyValueNet((8,), head="moves", endgame=True)
    # and a run with them resumes exactly
    train(tiny(tmp_path, "eg_half", endgame_features=True), max_updates=2)
    half = os.path.join(tmp_path, "eg_half", "checkpoints", "latest.pt")
    Trainer(Config(resume=half)).run()
    full, resumed = load_checkpoint(summary["checkpoint"]), load_checkpoint(half)
    assert resumed["global_step"] == full["global_step"]
    for k, v in full["model"].items():
        assert torch.equal(v, resumed["model"][k]), k


def test_shipped_agent_plays_the_exact_endgame():
    """The shipped agent has learnt to follow its endgame features: in 2-player endgames with a
    choice it picks a minimax-best action almost always (the plain network: about 96%)."""
    from agents.heuristic.endgame import endgame_rows, solve
    from agents.heuristic.expert import ExpertAgent

    rules = Rules()
    path = os.path.join(os.path.dirname(__file__), "..", "..", "agents", "pretrained", "escoba_2p.pt")
    agent = NeuralAgent.from_checkpoint(path, rules=rules)
    e = EscobaEngine(300, rules, single_round=True)
    e.reset(seed=31)
    players = [ExpertAgent(rules), GreedyAgent(rules)]
    obs, masks = [], []
    while not e.done.all():
        live = np.flatnonzero(~e.done)
        o, m = encode(e, e.to_act[live], live), action_masks(e, e.to_act[live], live)
        keep = endgame_rows(o, rules) & (m.sum(axis=1) > 1)
        obs.append(o[keep])
        masks.append(m[keep])
        acts = np.zeros(e.num_games, np.int64)
        acts[live] = np.where(live % 2 == 0, players[0].act_batch(o, m), players[1].act_batch(o, m))
        e.step(acts)
    obs, masks = np.concatenate(obs), np.concatenate(masks)
    assert len(obs) > 500
    v = solve(obs, rules)
    chosen = v[np.arange(len(obs)), agent.act_batch(obs, masks)]
    assert (chosen >= np.nanmax(v, axis=1)).mean() >= 0.98


def test_a_best_response_to_a_random_frozen_agent_resumes_exactly(tmp_path):
    # The frozen agent of a best response (escoba-bench exploit) draws from its own generator; a
    # resumed run must give it the same draws as the uninterrupted run, so the result is the same.
    kw = dict(opp_self=0.0, opp_snapshot=0.0, opp_greedy=0.0, opp_expert=0.0, opp_fixed=1.0,
              fixed_opponent="random", eval_interval=0, tensorboard=False)
    full = train(tiny(tmp_path, "full", **kw))
    ck = load_checkpoint(full["checkpoint"])
    train(tiny(tmp_path, "half", **kw), max_updates=2)
    Trainer(Config(resume=os.path.join(tmp_path, "half", "checkpoints", "latest.pt"))).run()
    resumed = load_checkpoint(os.path.join(tmp_path, "half", "checkpoints", "latest.pt"))
    assert resumed["global_step"] == ck["global_step"]
    for k, v in ck["model"].items():
        assert torch.equal(v, resumed["model"][k]), k
