"""Pinned digests: the agents' moves, the move networks' inputs, the league's shaping, the trainer's
weights and a resumed run.

Each digest is the SHA-256 of exact bytes (int64 actions, float32 features, float64 potentials)
computed on the code before a refactor that must not change behaviour. A change of any bit of an
agent's choice, a move feature or the shaping changes a digest: update one only for a change that
is meant to alter behaviour, and say why in the commit.

The networks' moves hold on every machine: they are computed in fixed point (``agents.nets.fixedpoint``),
whose results do not depend on the instruction set, the BLAS, the thread count or the batch.
``bash scripts/check_move_digests.sh`` runs these tests under every CPU setting NumPy, PyTorch, MKL
and OpenBLAS let a process force (``--quick``: three combined ones, as ``test_moves_any_cpu`` does).

Training is the exception: its float32 arithmetic runs in the CPU's own kernels (ATen's AVX2 or
AVX-512 paths, MKL's per-vendor code), so the same run gives other last bits on another processor
(measured: about 1e-6 apart after the tiny run between the AVX-512, AVX2 and plain kernels of one
machine, and a different digest on the machine the first pins were taken on). So the trainer is
pinned twice: bit for bit where bits are reproducible (a resumed run equals the uninterrupted one,
on the machine that runs the test), and across machines by what training moved, the absolute and
squared sums of each tensor's change from its initial weights, within 0.2% (kernel noise on them is
under 0.002% for a 4-update run; a change to what the trainer computes moves them by far more).
On an AVX-512 machine, ``ATEN_CPU_CAPABILITY=avx2`` or ``=default`` before ``pytest -k trainer`` runs
the other kernels: the test passes under each.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from agents.spec.registry import make_agent
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode

TABLES = {"2p": Rules(), "2p_jokers": Rules(jokers=2), "3p": Rules(num_players=3),
          "2v2": Rules(num_players=4, partnerships=True)}
AGENTS = {
    "2p": ["random", "greedy", "expert", "search:sims=40", "hybrid:sims=40", "endgame", "neural-2p",
           "neural-2p-plain", "neural-solo", "endgame:base=greedy"],
    "2p_jokers": ["greedy", "expert", "search:sims=40"],
    "3p": ["greedy", "expert", "search:sims=40", "neural-3p", "neural-3p-move", "strong-3p:sims=40"],
    "2v2": ["greedy", "expert", "search:sims=40", "neural-2v2", "neural-2v2-move",
            "neural-2v2-move:symmetric=false", "strong-2v2:sims=40"],
}


def sha(*arrays) -> str:
    """Return the SHA-256 (first 16 hex digits) of the arrays' exact bytes, in order."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()[:16]


def positions(rules: Rules, games: int = 24, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """Return (observations, masks) of the seat to act at every decision of seeded random rounds."""
    eng = EscobaEngine(games, rules, single_round=True)
    eng.reset(seed=seed)
    rng = np.random.default_rng(seed)
    obs, masks = [], []
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        seats = eng.to_act[live]
        obs.append(encode(eng, seats, live))
        m = action_masks(eng, seats, live)
        masks.append(m)
        actions = np.zeros(games, np.int64)
        for i, g in enumerate(live):
            actions[g] = rng.choice(np.flatnonzero(m[i]))
        eng.step(actions, active=~eng.done)
    return np.concatenate(obs), np.concatenate(masks)


@pytest.fixture(scope="module")
def boards():
    """The positions of every table, built once."""
    return {name: positions(rules) for name, rules in TABLES.items()}


MOVES = {
    ('2p', 'random'): 'a7dc00d3b412e025',
    ('2p', 'greedy'): '3ae5acb71b96799b',
    ('2p', 'expert'): '58869ce135062c31',
    ('2p', 'search:sims=40'): '1f5a1efc9b53f39e',
    ('2p', 'hybrid:sims=40'): 'b4fd1df7e44e8230',
    ('2p', 'endgame'): 'c2542ce6df83332f',
    ('2p', 'neural-2p'): 'e1e3664c3102da29',
    ('2p', 'neural-2p-plain'): '824cb87e7e50f10a',
    ('2p', 'neural-solo'): '2082ca67d075cc8d',
    ('2p', 'endgame:base=greedy'): 'e8f72ac0014c00e4',
    ('2p_jokers', 'greedy'): '806f4b7610ac3030',
    ('2p_jokers', 'expert'): '4f3aff09c154fd3b',
    ('2p_jokers', 'search:sims=40'): '9a19a353c8694184',
    ('3p', 'greedy'): 'f62f7a013ca7a94f',
    ('3p', 'expert'): '2263cf273b9dd4e6',
    ('3p', 'search:sims=40'): '73bbfa0bbddf80bc',
    ('3p', 'neural-3p'): 'c2099de907139891',
    ('3p', 'neural-3p-move'): '6626848b6e9a2c25',  # fixed point: decision 966's exact tie, the first move
    ('3p', 'strong-3p:sims=40'): '73bbfa0bbddf80bc',
    ('2v2', 'greedy'): '17a88560a261fbaa',
    ('2v2', 'expert'): 'fdae212fe055a2e7',
    ('2v2', 'search:sims=40'): 'd8d4c2b56025232a',
    ('2v2', 'neural-2v2'): '46d16e95b680a3c6',
    ('2v2', 'neural-2v2-move'): '58bedf0d7b9e4f6d',
    ('2v2', 'neural-2v2-move:symmetric=false'): 'd63cbf2693c2d882',
    ('2v2', 'strong-2v2:sims=40'): 'd8d4c2b56025232a',
}


@pytest.mark.parametrize("table,spec", [(t, s) for t, specs in AGENTS.items() for s in specs])
def test_agent_moves_are_pinned(boards, table, spec):
    obs, masks = boards[table]
    agent = make_agent(spec, rules=TABLES[table], seed=5)
    chunks = [agent.act_batch(obs[i:i + 64], masks[i:i + 64]) for i in range(0, len(obs), 64)]
    actions = np.concatenate(chunks).astype(np.int64)
    assert masks[np.arange(len(actions)), actions].all()
    assert sha(actions) == MOVES[table, spec]


TABLE_DIGESTS = {  # table: (move features of the first 200 positions, shaping potential of 30 steps)
    "2p": ("cd49c7417ce1dad4", "50b73fe2b04fff26"),
    "2p_jokers": ("42b1e69b6d3f4869", "b38b596da9d37064"),
    "3p": ("f5a16eb05c2de688", "b9bfdbf2f502ca10"),
    "2v2": ("5683b26d109eb175", "062ff29ccace118c"),
}


@pytest.mark.parametrize("table", list(TABLES))
def test_move_features_are_pinned(boards, table):
    from agents.nets.features import move_features

    obs, _ = boards[table]
    assert sha(move_features(obs[:200], TABLES[table])) == TABLE_DIGESTS[table][0]


MOVE_INPUTS = {  # the move networks' inputs of the first 300 positions (2p: of its midgame or endgame rows)
    ("2p", "endgame"): "13efd022b2d237df",
    ("2p", "midgame"): "3f4fd0e3cdad6300",
    ("2p", "midgame-answers"): "200885dfaa681b4b",
    ("3p", "table"): "308e23d40ca883fa",
    ("3p", "last-answers"): "55dab2ec1de73043",
    ("2v2", "table"): "2ef46dcf151f6aca",
    ("2v2", "last-answers"): "9073416bb2561025",
}


def move_inputs(kind: str, obs: np.ndarray, masks: np.ndarray, rules: Rules) -> tuple[np.ndarray, ...]:
    """Return the arrays of ``kind``'s move inputs of the positions: inputs, member, and the moves."""
    from agents.heuristic.endgame import endgame_rows
    from agents.nets.solo import endgame_inputs, midgame_inputs
    from agents.nets.tablenet import table_inputs

    if kind == "endgame" or kind.startswith("midgame"):
        rows = endgame_rows(obs, rules) == (kind == "endgame")
        obs, masks = obs[rows], masks[rows]
    obs, masks = obs[:300], masks[:300]
    if kind == "endgame":
        moves, x, member = endgame_inputs(obs, rules, masks)
    elif kind.startswith("midgame"):
        inputs = "answers" if kind.endswith("answers") else "plain"
        moves, x, member = midgame_inputs(obs, rules, masks, inputs=inputs)
    else:
        moves, x, member = table_inputs(obs, rules, masks, answers=kind.endswith("answers"))
    return x, member, moves.row, moves.card, moves.option, moves.start


@pytest.mark.parametrize("table,kind", list(MOVE_INPUTS))
def test_move_network_inputs_are_pinned(boards, table, kind):
    obs, masks = boards[table]
    assert sha(*move_inputs(kind, obs, masks, TABLES[table])) == MOVE_INPUTS[table, kind]


@pytest.mark.parametrize("table", list(TABLES))
def test_shaping_potential_is_pinned(table):
    from agents.training.league import potential

    rules = TABLES[table]
    eng = EscobaEngine(16, rules, single_round=True)
    eng.reset(seed=4)
    rng = np.random.default_rng(4)
    out = []
    for _ in range(30):
        out.append(np.asarray(potential(eng), np.float64))
        legal = eng.legal_action_mask()
        actions = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal])
        eng.step(actions, active=~eng.done)
    assert sha(*out) == TABLE_DIGESTS[table][1]


TINY = dict(num_envs=32, num_steps=16, hidden=(32,), total_steps=32 * 16 * 4, eval_interval=1024,
            eval_deals=16, snapshot_interval=512, save_interval=1024, opp_self=0.4, opp_snapshot=0.2,
            opp_greedy=0.2, opp_expert=0.2, progress=False, seed=3, tensorboard=False)
VARIANTS = {"plain": {}, "overlap": {"overlap": True}, "oracle": {"critic": "oracle"}}
"""Synchronous, overlapped rollouts, oracle critic."""
PINNED_UPDATES = {"plain": None, "overlap": None, "oracle": 1}
"""Updates of the run whose drift is pinned (None: the whole tiny run). The oracle critic's run is
pinned after its first update: later, a sampled action can flip on another processor's last bits
(measured with the plain kernels), and the trajectories part."""
DRIFT = {
    "plain": {
        "move_embed.weight": (3.7113416, 0.095338023),
        "move_linear.weight": (0.27509951, 0.0061974004),
        "move_query.bias": (0.20624272, 0.00399273),
        "move_query.weight": (6.3923397, 0.12566948),
        "policy.bias": (0.55428209, 0.010740657),
        "policy.weight": (17.255042, 0.35017988),
        "torso.0.bias": (0.56102431, 0.019544853),
        "torso.0.weight": (143.30415, 3.0808457),
        "value.bias": (0.0021791763, 4.7488094e-06),
        "value.weight": (0.33551124, 0.0050844247),
    },
    "overlap": {
        "move_embed.weight": (3.037874, 0.064093138),
        "move_linear.weight": (0.23920735, 0.0049819612),
        "move_query.bias": (0.19582991, 0.0032907126),
        "move_query.weight": (6.0722618, 0.10952995),
        "policy.bias": (0.45158416, 0.0077831324),
        "policy.weight": (15.298252, 0.28542229),
        "torso.0.bias": (0.34812848, 0.0059854808),
        "torso.0.weight": (124.37943, 2.2635452),
        "value.bias": (0.0030518149, 9.3135739e-06),
        "value.weight": (0.3368913, 0.0047707539),
    },
    "oracle": {
        "move_embed.weight": (1.9121997, 0.021526467),
        "move_linear.weight": (0.13466255, 0.0015626206),
        "move_query.bias": (0.11773747, 0.0011657683),
        "move_query.weight": (3.9935001, 0.048149275),
        "policy.bias": (0.36778705, 0.0049281527),
        "policy.weight": (10.935537, 0.14239833),
        "torso.0.bias": (0.44858439, 0.0073389215),
        "torso.0.weight": (81.678793, 0.99732011),
        "value.bias": (0, 0),
        "value.weight": (0, 0),
    },
}
"""Per variant and tensor: (absolute sum, squared sum) of the change from the initial weights. Taken
on an AVX-512 machine with code whose weights there are bit-identical to those of the commit that
last pinned the trainer's weight digests, so they pin the same behaviour."""


def weights(ckpt) -> str:
    """Return the digest of a checkpoint's network tensors, in key order."""
    return sha(*(ckpt["model"][k].numpy() for k in sorted(ckpt["model"])))


def drift(ckpt, initial: dict) -> dict[str, tuple[float, float]]:
    """Return, per tensor, the absolute and squared sums of its change from the initial weights."""
    out = {}
    for k in sorted(ckpt["model"]):
        d = ckpt["model"][k].double() - initial[k]
        out[k] = (float(d.abs().sum()), float((d * d).sum()))
    return out


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_trainer_weights_and_resume_are_pinned(tmp_path, variant):
    from agents.nets.neural import load_checkpoint
    from agents.training import Config, train
    from agents.training.trainer import Trainer

    cfg = {**TINY, **VARIANTS[variant], "runs_dir": str(tmp_path)}
    initial = {k: v.detach().double().clone() for k, v in Trainer(Config(**cfg, run_name="init")).net
               .state_dict().items()}
    full = train(Config(**cfg, run_name="full"))
    train(Config(**cfg, run_name="half"), max_updates=2)
    resumed = train(Config(resume=str(tmp_path / "half" / "checkpoints" / "latest.pt")))
    # a resume is exact: the same bits as the uninterrupted run
    assert weights(load_checkpoint(resumed["checkpoint"])) == weights(load_checkpoint(full["checkpoint"]))
    pinned = full if PINNED_UPDATES[variant] is None else train(Config(**cfg, run_name="pinned"),
                                                                  max_updates=PINNED_UPDATES[variant])
    got = drift(load_checkpoint(pinned["checkpoint"]), initial)
    assert list(got) == list(DRIFT[variant])
    for k, want in DRIFT[variant].items():
        assert got[k] == pytest.approx(want, rel=2e-3), k
