"""Teacher labels (agents.training.distill) and kickstarting PPO from them (Config.distill_data,
init_from)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.base import RandomAgent
from agents.heuristic.greedy import GreedyAgent
from agents.nets.neural import NeuralAgent, PolicyValueNet, checkpoint_dict, save_checkpoint
from agents.training import Config, Trainer
from agents.training.distill import collect_labels, load_labels, main, save_labels
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode


@pytest.fixture(scope="module")
def labels(tmp_path_factory):
    """Greedy-labelled decisions of random play: return (path, arrays)."""
    rules = Rules()
    data = collect_labels(GreedyAgent(rules), [RandomAgent(rules, seed=1)], rules, 400, num_games=16, seed=5)
    path = tmp_path_factory.mktemp("labels") / "greedy.npz"
    save_labels(path, data, rules, teacher="greedy")
    return path, data


def test_labels_are_the_teachers_legal_choices_at_real_decisions(labels):
    _, d = labels
    n = len(d["action"])
    assert n >= 400 and d["obs"].shape == (n, 546) and d["mask"].shape == (n, 40)
    assert (d["mask"].sum(axis=1) > 1).all()  # forced moves are not labelled
    assert d["mask"][np.arange(n), d["action"]].all()
    again = GreedyAgent(Rules()).act_batch(d["obs"].astype(np.float32), d["mask"])
    assert np.array_equal(again, d["action"])


def test_collection_is_deterministic(labels):
    rules = Rules()
    a = collect_labels(GreedyAgent(rules), [RandomAgent(rules, seed=1)], rules, 400, num_games=16, seed=5)
    assert all(np.array_equal(a[k], labels[1][k]) for k in ("obs", "mask", "action"))


def test_labels_round_trip_and_bad_files_are_refused(labels, tmp_path):
    path, d = labels
    arrays, meta = load_labels(path, Rules())
    assert meta["teacher"] == "greedy" and np.array_equal(arrays["action"], d["action"])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_labels(tmp_path / "nope.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="corrupt"):
        load_labels(bad)
    with pytest.raises(ValueError, match="collected for"):
        load_labels(path, Rules(num_players=3))
    wrong = dict(d, action=np.where(d["mask"][:, 0] == 0, 0, d["action"]))  # some illegal labels
    save_labels(tmp_path / "wrong.npz", wrong, Rules())
    with pytest.raises(ValueError, match="not legal"):
        load_labels(tmp_path / "wrong.npz")


def _cross_entropy(net: PolicyValueNet, d: dict) -> float:
    obs = d["obs"].astype(np.float32)
    with torch.no_grad():
        feats = torch.from_numpy(net.features(obs))
        logits, _ = net(torch.from_numpy(obs), torch.from_numpy(d["mask"]), feats)
        return float(torch.nn.functional.cross_entropy(logits, torch.from_numpy(d["action"])))


def test_kickstarting_pulls_the_policy_toward_the_teacher(labels, tmp_path):
    path, d = labels
    cfg = Config(run_name="ks", runs_dir=str(tmp_path), num_envs=32, num_steps=16, hidden=(32,),
                 total_steps=32 * 16 * 4, eval_interval=0, tensorboard=False, progress=False, seed=2,
                 distill_data=str(path), distill_coef=5.0, learning_rate=3e-3)
    t = Trainer(cfg)
    before = _cross_entropy(t.net, d)
    summary = t.run()
    assert summary["stats"]["distill_loss"] > 0
    assert _cross_entropy(t.net, d) < before - 0.2
    rows = (tmp_path / "ks" / "metrics.csv").read_text()
    assert "losses/distill_loss" in rows


def test_init_from_copies_the_weights_and_checks_the_shape(tmp_path):
    src = PolicyValueNet((32,), head="moves")
    path = tmp_path / "src.pt"
    save_checkpoint(path, checkpoint_dict(src, Rules()))
    base = dict(run_name="i", runs_dir=str(tmp_path), num_envs=8, num_steps=4, eval_interval=0,
                tensorboard=False, progress=False)
    t = Trainer(Config(**base, hidden=(32,), init_from=str(path)))
    assert all(torch.equal(a, b) for a, b in zip(t.net.state_dict().values(), src.state_dict().values(),
                                                 strict=True))
    with pytest.raises(ValueError, match="set --hidden/--head/--endgame-features to match"):
        Trainer(Config(**base, hidden=(16,), init_from=str(path)))
    with pytest.raises(ValueError, match="trained for other rules"):
        Trainer(Config(**base, hidden=(32,), init_from=str(path), rules={"num_players": 3}))
    with pytest.raises(FileNotFoundError):
        Trainer(Config(**base, hidden=(32,), init_from=str(tmp_path / "missing.pt")))
    assert isinstance(NeuralAgent(t.net), NeuralAgent)


def test_init_from_grows_a_network_by_the_endgame_features_with_zero_weights(tmp_path):
    src = PolicyValueNet((32,), head="moves")
    torch.nn.init.normal_(src.move_linear.weight)  # non-zero, so that the copy is visible
    path = tmp_path / "src.pt"
    save_checkpoint(path, checkpoint_dict(src, Rules()))
    base = dict(run_name="g", runs_dir=str(tmp_path), num_envs=8, num_steps=4, eval_interval=0,
                tensorboard=False, progress=False, hidden=(32,), init_from=str(path))
    t = Trainer(Config(**base, endgame_features=True))
    k = len(src.feature_names)
    assert t.net.endgame and len(t.net.feature_names) == k + 2
    for key, v in src.state_dict().items():
        grown = t.net.state_dict()[key]
        torch.testing.assert_close(grown[..., : v.shape[-1]], v, rtol=0, atol=0)
        if grown.shape != v.shape:
            assert key in ("move_linear.weight", "move_embed.weight")
            assert (grown[..., k:] == 0).all()
    # the grown network starts with exactly the source's policy (the new features weigh 0)
    e = EscobaEngine(16, Rules(), single_round=True)
    e.reset(seed=4)
    obs, mask = encode(e, e.to_act), action_masks(e, e.to_act)
    np.testing.assert_array_equal(NeuralAgent(t.net).act_batch(obs, mask),
                                  NeuralAgent(src).act_batch(obs, mask))
    # the reverse (dropping features) is refused
    grown_path = tmp_path / "grown.pt"
    save_checkpoint(grown_path, checkpoint_dict(t.net, Rules()))
    with pytest.raises(ValueError, match="--endgame-features"):
        Trainer(Config(**{**base, "init_from": str(grown_path)}))
    with pytest.raises(ValueError, match="2-player endgame only"):
        Trainer(Config(**base, endgame_features=True, rules={"num_players": 3}))
    with pytest.raises(ValueError, match="action-conditioned head"):
        Trainer(Config(**{**base, "init_from": None}, endgame_features=True, head="mlp"))


def test_cli_writes_labels_and_reports_bad_agents(tmp_path, capsys):
    out = tmp_path / "l.npz"
    assert main(["--out", str(out), "--labels", "30", "--teacher", "greedy", "--behaviour", "random",
                 "--games", "4", "--no-progress"]) == 0
    arrays, meta = load_labels(out)
    assert len(arrays["action"]) >= 30 and meta["behaviour"] == ["random"]
    assert main(["--out", str(tmp_path / "bad.npz"), "--teacher", "nosuchagent", "--no-progress"]) == 2
    assert "nosuchagent" in capsys.readouterr().err and not (tmp_path / "bad.npz").exists()
    before = out.read_bytes()  # an existing file is never overwritten
    assert main(["--out", str(out), "--labels", "30", "--teacher", "greedy", "--no-progress"]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_bytes() == before
    plain = tmp_path / "noext"  # written under exactly the name given, and whole
    assert main(["--out", str(plain), "--labels", "10", "--teacher", "greedy", "--games", "4",
                 "--no-progress"]) == 0
    assert load_labels(plain)[0]["action"].size >= 10 and sorted(p.name for p in tmp_path.iterdir()) == [
        "l.npz", "noext"]


def test_search_labels_can_carry_the_teachers_action_values(tmp_path):
    from agents.search.pimc import SearchAgent

    rules = Rules()
    data = collect_labels(SearchAgent(rules, seed=2, sims=40), [RandomAgent(rules, seed=1)], rules, 40,
                          num_games=8, seed=5, values=True)
    v, a, mask = data["values"], data["action"], data["mask"]
    n = len(a)
    assert v.shape == mask.shape and v.dtype == np.float32
    assert np.isfinite(v[np.arange(n), a]).all()
    assert (v[np.arange(n), a] == v.max(axis=1)).all()  # the teacher played its best-valued action
    assert not np.isfinite(v[mask == 0]).any()  # no value for an illegal action
    save_labels(tmp_path / "v.npz", data, rules)
    arrays, _ = load_labels(tmp_path / "v.npz", rules)
    np.testing.assert_array_equal(arrays["values"], v)
    with pytest.raises(ValueError, match="search or endgame teacher"):
        collect_labels(GreedyAgent(rules), [RandomAgent(rules)], rules, 10, values=True)


class _Counting(GreedyAgent):
    """A greedy teacher that records the stock size of every decision it is asked about."""

    def __init__(self, rules):
        super().__init__(rules)
        self.asked = []

    def act_batch(self, observations, action_masks, state=None):
        from agents.worlds import observation_scalars

        self.asked.extend(observation_scalars(np.asarray(observations, np.float32), self.rules)["stock"])
        return super().act_batch(observations, action_masks, state)


@pytest.mark.parametrize("players, teams", [(2, False), (4, True)])
def test_last_deal_labels_only_the_decisions_once_the_stock_is_empty(players, teams, tmp_path):
    """``last_deal``: every label is taken at an empty stock, and the teacher is asked nothing else;
    without it the same play labels every deal."""
    from agents.worlds import observation_scalars

    rules = Rules(num_players=players, partnerships=teams)
    seen = {}
    for last in (False, True):
        teacher = _Counting(rules)
        data = collect_labels(teacher, [RandomAgent(rules, seed=1)], rules, 150, num_games=8, seed=4,
                              last_deal=last)
        stock = observation_scalars(data["obs"].astype(np.float32), rules)["stock"]
        seen[last] = set(stock.tolist())
        if last:
            assert set(teacher.asked) == {0} and len(data["action"]) >= 150
    assert seen[True] == {0} and len(seen[False]) > 1
    out = tmp_path / "last.npz"
    argv = ["--out", str(out), "--labels", "30", "--games", "4", "--teacher", "greedy",
            "--behaviour", "random",
            "--last-deal", "--no-progress", "--players", str(players)] + (["--partnerships"] if teams else [])
    assert main(argv) == 0
    arrays, meta = load_labels(out, rules)
    assert meta["last_deal"] is True
    assert (observation_scalars(arrays["obs"].astype(np.float32), rules)["stock"] == 0).all()


def test_stock_labels_only_the_decisions_of_that_deal(tmp_path, capsys):
    """``stock=6``: every label is taken with 6 cards in the stock (the deal before the last at 2
    players), and the teacher is asked nothing else; a count that contradicts ``last_deal`` is refused."""
    from agents.worlds import observation_scalars

    rules = Rules()
    teacher = _Counting(rules)
    data = collect_labels(teacher, [RandomAgent(rules, seed=1)], rules, 60, num_games=8, seed=4, stock=6)
    assert set(teacher.asked) == {6} and len(data["action"]) >= 60
    assert set(observation_scalars(data["obs"].astype(np.float32), rules)["stock"].tolist()) == {6}
    with pytest.raises(ValueError, match="stock must be a card count"):
        collect_labels(teacher, [RandomAgent(rules)], rules, 10, stock=6, last_deal=True)
    out = tmp_path / "six.npz"
    assert main(["--out", str(out), "--labels", "20", "--games", "4", "--teacher", "greedy", "--behaviour",
                 "random", "--stock", "6", "--no-progress"]) == 0
    arrays, meta = load_labels(out, rules)
    assert meta["stock"] == 6
    assert (observation_scalars(arrays["obs"].astype(np.float32), rules)["stock"] == 6).all()
    bad = tmp_path / "bad.npz"
    assert main(["--out", str(bad), "--stock", "-1", "--teacher", "greedy", "--no-progress"]) == 2
    assert "stock must be a card count" in capsys.readouterr().err and not bad.exists()


def test_action_regret_is_the_best_legal_value_minus_the_value_taken():
    from agents.training.distill import action_regret

    ninf = -np.inf
    values = np.array([[1.0, 3.0, 9.0, 0.5],     # 9.0 is not legal: the best legal value is 3.0
                       [2.0, ninf, 2.0, 0.0],    # action 1 is legal but was not valued
                       [0.25, 0.5, ninf, ninf]], np.float32)
    mask = np.array([[1, 1, 0, 1], [1, 1, 1, 0], [1, 1, 0, 0]], np.int8)
    r = action_regret(values, mask, np.array([3, 1, 1]))
    assert r[0] == 2.5 and np.isnan(r[1]) and r[2] == 0.0
    assert action_regret(values, mask, np.array([1, 2, 0])).tolist() == [0.0, 0.0, 0.25]
