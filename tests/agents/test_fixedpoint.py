"""Fixed-point network evaluation (agents.nets.fixedpoint): exact integers, so the same move on every machine.

The move a network chooses must not depend on the batch a position comes in, the thread count, the
order of a sum or the instruction set. These tests check the arithmetic against an independent exact
computation (NumPy int64, no BLAS), the independence from batch, row order and threads, the range
check, and that the shipped agents decide through it.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from agents import make_agent
from agents.nets.fixedpoint import (
    ACT_BITS,
    CAPACITY,
    UNIT,
    WEIGHT_BITS,
    FixedLinear,
    FixedMLP,
    move_values,
    policy_logits,
    quantize,
    symmetric_move_values,
)
from agents.nets.solo import EndgameNet, suit_permutations
from agents.nets.tablenet import table_inputs
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode

THREE = Rules(num_players=3)


def exact_reference(net: EndgameNet, x: np.ndarray) -> np.ndarray:
    """Return the fixed-point network's outputs computed with NumPy int64 sums (no BLAS, no float in
    any sum): each layer's exact integer sum, rounded once to float64, plus the bias."""
    h = np.rint(x.astype(np.float64) * 2.0 ** ACT_BITS).astype(np.int64)
    layers = [m for m in net.mlp if isinstance(m, torch.nn.Linear)]
    for i, layer in enumerate(layers):
        w = np.rint(layer.weight.detach().double().numpy() * 2.0 ** WEIGHT_BITS).astype(np.int64)
        b = np.rint(layer.bias.detach().double().numpy() / UNIT) * UNIT
        y = (h @ w.T).astype(np.float64) * UNIT + b
        if i == len(layers) - 1:
            return y[:, 0]
        h = np.rint(np.maximum(y, 0) * 2.0 ** ACT_BITS).astype(np.int64)  # ReLU, then 2**-ACT_BITS


def table_moves(rules: Rules = THREE, games: int = 6, seed: int = 2) -> np.ndarray:
    """Return the move inputs of the first decisions of a few seeded deals."""
    eng = EscobaEngine(games, rules, single_round=True)
    eng.reset(seed=seed)
    live = np.arange(games)
    return table_inputs(encode(eng, eng.to_act, live), rules, action_masks(eng, eng.to_act, live))[1]


def test_the_float64_products_are_the_exact_integer_network():
    torch.manual_seed(0)
    net = EndgameNet([64, 32], 296)
    x = table_moves()
    assert np.array_equal(move_values(net, x).numpy(), exact_reference(net, x))
    # and close to the float32 network (the rounding is float32's own size)
    with torch.no_grad():
        assert np.abs(move_values(net, x).numpy() - net(torch.from_numpy(x)).numpy()).max() < 1e-5


def test_a_value_depends_on_its_own_row_only_not_on_batch_order_or_threads():
    """The same row alone, in a batch, in another order and with 1 or 2 threads: the same bits (a float32
    forward pass differs in the last bits between these: another BLAS blocking, another sum order)."""
    agent = make_agent("neural-3p-move", rules=THREE, seed=0)
    x = table_moves(games=12)
    perms = suit_permutations(x.shape[1], 5)
    whole = symmetric_move_values(agent.net, x, perms).numpy()
    order = np.random.default_rng(0).permutation(len(x))
    assert np.array_equal(symmetric_move_values(agent.net, x[order], perms).numpy(), whole[order])
    alone = np.concatenate([symmetric_move_values(agent.net, x[i:i + 1], perms).numpy()
                            for i in range(len(x))])
    assert np.array_equal(alone, whole)
    threads = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            assert np.array_equal(symmetric_move_values(agent.net, x, perms).numpy(), whole)
    finally:
        torch.set_num_threads(threads)


def test_suit_permuted_moves_get_the_same_symmetric_value_to_the_bit():
    """A move and its copy with two plain suits swapped are worth exactly the same to a symmetric network:
    the six permuted rows are the same rows, so the integer sums are equal (not merely close)."""
    torch.manual_seed(1)
    net = EndgameNet([32, 32], 296)
    x = table_moves()
    perms = suit_permutations(x.shape[1], 5)
    for p in perms[1:]:
        assert np.array_equal(symmetric_move_values(net, x[:, p], perms).numpy(),
                              symmetric_move_values(net, x, perms).numpy())


def test_a_wide_sum_is_split_and_a_row_gets_the_same_bits_alone_and_beside_it():
    """A row whose sums may pass 2**53 units takes two exact products (the weights split in two) and one
    rounding; a row beside it in the batch, computed either way, keeps its bits."""
    torch.manual_seed(2)
    layer = FixedLinear(torch.randn(3, 40), torch.randn(3))
    x = np.random.default_rng(0).random((3, 40)).astype(np.float32)
    x[2] *= 3000.0  # 40 terms of up to 3000 x 3: past 2**53 units (512)
    q = quantize(x)
    alone = [layer(q[i:i + 1]) for i in range(3)]
    together = layer(q)
    assert torch.equal(torch.cat(alone), together)
    w = np.rint(layer.w_t.numpy().T).astype(np.int64)  # the exact sum, in Python integers, rounded once
    exact = [float(Fraction(int(v)) * Fraction(UNIT)) for v in (np.rint(q.numpy()).astype(np.int64)[2] @ w.T)]
    assert together[2].tolist() == [e + b for e, b in zip(exact, layer.bias.tolist(), strict=True)]
    assert float(torch.linalg.vector_norm(q[2])) * layer.w_norm >= CAPACITY  # it took the split path
    with pytest.raises(ArithmeticError, match="beyond the fixed-point range"):
        layer(quantize(np.full((1, 40), 1e7, np.float32)))


def test_only_linear_and_relu_layers_are_evaluated():
    with pytest.raises(TypeError, match="Linear and ReLU"):
        FixedMLP([torch.nn.Linear(3, 3), torch.nn.Tanh()])


def test_the_cache_follows_the_weights():
    torch.manual_seed(3)
    net = EndgameNet([8], 296)
    x = table_moves()
    before = move_values(net, x).numpy()
    with torch.no_grad():
        net.mlp[-1].bias.add_(1.0)  # an in-place change (an optimizer step) builds the copy again
    assert np.allclose(move_values(net, x).numpy(), before + 1.0, atol=1e-6)


@pytest.mark.parametrize("spec,rules", [("neural-2p", Rules()), ("neural-3p", THREE),
                                        ("neural-2v2", Rules(num_players=4, partnerships=True))])
def test_a_policy_network_plays_the_best_fixed_point_logit_close_to_its_float32_logits(spec, rules):
    agent = make_agent(spec, rules=rules, seed=0)
    eng = EscobaEngine(16, rules, single_round=True)
    eng.reset(seed=5)
    live = np.arange(16)
    obs, masks = encode(eng, eng.to_act, live), action_masks(eng, eng.to_act, live)
    feats = agent.net.features(obs)
    logits = policy_logits(agent.net, obs, feats)
    with torch.no_grad():
        ref, _ = agent.net(torch.from_numpy(obs), torch.from_numpy(masks), torch.from_numpy(feats))
    legal = masks > 0
    assert np.abs(logits[legal] - ref.numpy()[legal]).max() < 1e-4
    assert np.array_equal(agent.act_batch(obs, masks), np.argmax(np.where(legal, logits, -np.inf), axis=1))
    alone = np.concatenate([agent.act_batch(obs[i:i + 1], masks[i:i + 1]) for i in range(16)])
    assert np.array_equal(alone, agent.act_batch(obs, masks))


@pytest.mark.parametrize("spec", ["neural-3p-move", "neural-2v2-move"])
def test_a_move_network_values_a_position_the_same_alone_and_in_a_batch(spec):
    """The web arena asks for one position at a time, a benchmark for hundreds: the values, and so the
    moves, must be the same bits (a float32 forward pass gave other last bits for a row alone)."""
    rules = THREE if spec == "neural-3p-move" else Rules(num_players=4, partnerships=True)
    agent = make_agent(spec, rules=rules, seed=0)
    eng = EscobaEngine(24, rules, single_round=True)
    eng.reset(seed=9)
    live = np.arange(24)
    obs, masks = encode(eng, eng.to_act, live), action_masks(eng, eng.to_act, live)
    moves, x, _ = table_inputs(obs, rules, masks)
    with torch.no_grad():
        whole = agent.move_values(torch.from_numpy(x)).numpy()
        alone = [agent.move_values(torch.from_numpy(x[a:b])).numpy()
                 for a, b in zip(moves.start[:-1], moves.start[1:], strict=True)]
    assert np.array_equal(np.concatenate(alone), whole)
    assert np.array_equal(np.concatenate([agent.act_batch(obs[i:i + 1], masks[i:i + 1]) for i in live]),
                          agent.act_batch(obs, masks))
