"""Fixed-point evaluation of the networks that choose moves: the same bits on every machine.

A float32 forward pass gives other last bits on another processor, another BLAS or another thread
count: a matrix product sums in an order that depends on the SIMD width and the blocking, and a row
of a batch can come out differently from the same row alone. Most decisions have a clear best move
and do not care; but two moves that are worth exactly the same (a symmetric network's values of two
suit-permuted moves) or nearly so are then split by rounding noise, so the same deal was played
differently on a machine with AVX-512 than on one without.

Here every network that decides a move is evaluated so that each layer's result is defined exactly,
independently of how a BLAS adds:

- inputs and hidden activations are rounded (half to even) to multiples of ``2**-ACT_BITS``, weights
  to multiples of ``2**-WEIGHT_BITS``, biases to multiples of ``UNIT`` (``2**-(ACT_BITS +
  WEIGHT_BITS)``): a product's terms are integers of ``UNIT``;
- a layer's output is the exact sum of its terms rounded once to float64 (then plus its bias, rounded
  once). When every partial sum stays below ``2**53`` units (a Cauchy-Schwarz bound checks it,
  ``CAPACITY``), one float64 matrix product computes that exact sum, since float64 adds integers below
  ``2**53`` without error in any order (FMA, blocking, threads, SIMD width); else the weights are split
  in two (``SPLIT_BITS``) and two such exact products are added, one rounding. Either way the result
  is the same bits (it assumes a classical product, as every BLAS computes; a Strassen-like one would
  subtract entries first);
- a mean of several values (a symmetric network's six) adds them in sorted order.

So a move's value is a function of its own inputs alone (not of the batch it comes in), identical on
every machine; values that are equal in exact arithmetic (a symmetric network's suit-permuted moves)
are equal here, and ``agents.moves.best_per_row`` breaks such ties by a fixed order (the first move as
``agents.moves.enumerate_moves`` lists them). The rounding moves a value by about 1e-7 from the float32
forward pass, the size of float32's own rounding noise. Training keeps float32 (``agents.training``);
only play uses this module.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import torch
from torch import nn

ACT_BITS = 21
"""Inputs and hidden activations are multiples of ``2**-ACT_BITS`` (rounding error <= 2.4e-7)."""
WEIGHT_BITS = 23
"""Weights are multiples of ``2**-WEIGHT_BITS`` (rounding error <= 6e-8)."""
UNIT = 2.0 ** -(ACT_BITS + WEIGHT_BITS)
"""The terms of a layer's sums (and its biases) are integer multiples of ``UNIT``."""
CAPACITY = 2.0 ** 53 * (1 - 2.0 ** -20)
"""Partial sums below this many units are exact in float64 (with room for the bound's own rounding)."""
SPLIT_BITS = 11
"""A wide product splits its right factor into a high part (multiples of ``2**-SPLIT_BITS``) and a low
part below ``2**-(SPLIT_BITS + 1)``: two exact products whose sum is rounded once."""
_REACH = 2.0 ** 20
"""Beyond this (an activation times a row of weights, in real units) even the split products could
overflow: activations a million times larger than any seen in play; refused."""


def quantize(x: np.ndarray | torch.Tensor, bits: int = ACT_BITS) -> torch.Tensor:
    """Return float64 integers: ``x`` in units of ``2**-bits``, rounded half to even."""
    t = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
    return torch.round(t.detach().to("cpu", torch.float64) * 2.0 ** bits)


def activations(y: torch.Tensor, relu: bool) -> torch.Tensor:
    """Return a layer's output ``y`` (float64) as the next layer's input: after a ReLU if ``relu``,
    in units of ``2**-ACT_BITS``."""
    out = y.clamp_min(0.0) if relu else y * 1.0  # a new tensor: the caller's is left alone
    return out.mul_(2.0 ** ACT_BITS).round_()


def exact_product(x: torch.Tensor, w: torch.Tensor, x_bits: int, w_bits: int, w_norm: float,
                  where: str) -> torch.Tensor:
    """Return float64 ``x @ w`` rounded once from its exact value: ``x`` (..., n) and ``w`` (n, m), or
    (B, n, 1) per row of a batched ``x`` (B, A, n), integers in units of ``2**-x_bits`` and
    ``2**-w_bits``; ``w_norm`` bounds the Euclidean norm of a column of ``w``."""
    flat = x.reshape(-1, x.shape[-1])
    bound = float(torch.linalg.vector_norm(flat, dim=1).max()) * w_norm if flat.numel() else 0.0
    unit = 2.0 ** -(x_bits + w_bits)
    if bound < CAPACITY:  # every partial sum is an integer below 2**53: exact in any order
        return (x @ w) * unit
    shift = w_bits - SPLIT_BITS
    hi = torch.round(w * 2.0 ** -shift)
    lo = w - hi * 2.0 ** shift  # |lo| <= 2**(shift - 1)
    reach = float(flat.abs().max()) * float(hi.abs().sum(-2).max()) * 2.0 ** -(x_bits + SPLIT_BITS)
    spread = float(flat.abs().sum(1).max()) * 2.0 ** (shift - 1)
    if reach >= _REACH or spread >= CAPACITY:
        raise ArithmeticError(f"{where}: an activation beyond the fixed-point range (about 1e6 times any "
                              f"seen in play); the move cannot be computed exactly")
    return (x @ hi) * (unit * 2.0 ** shift) + (x @ lo) * unit  # two exact products, one rounding


class FixedLinear:
    """An ``nn.Linear`` (or a bare weight) in fixed point: integer weights (units ``2**-WEIGHT_BITS``),
    a bias on the ``UNIT`` grid."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, name: str = "linear"):
        w = quantize(weight, WEIGHT_BITS)  # (out, in)
        self.w_t = w.T.contiguous()
        norms = torch.linalg.vector_norm(w, dim=1)
        self.w_norm = float(norms.max()) if norms.numel() else 0.0
        self.bias = None if bias is None else quantize(bias, ACT_BITS + WEIGHT_BITS) * UNIT
        self.name = name

    @classmethod
    def of(cls, layer: nn.Linear, name: str = "linear") -> FixedLinear:
        """Return the fixed-point copy of ``layer``."""
        return cls(layer.weight, layer.bias, name)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Return float64 ``x @ W.T`` rounded once from its exact value, plus the bias (rounded once),
        for activations ``x`` (..., in) in units of ``2**-ACT_BITS``."""
        out = exact_product(x, self.w_t, ACT_BITS, WEIGHT_BITS, self.w_norm, self.name)
        return out if self.bias is None else out + self.bias


class FixedMLP:
    """A stack of ``nn.Linear`` and ``nn.ReLU`` layers in fixed point (module doc)."""

    def __init__(self, layers: Sequence[nn.Module], name: str = "network"):
        self.steps: list[FixedLinear | str] = []
        for i, layer in enumerate(layers):
            if isinstance(layer, nn.Linear):
                self.steps.append(FixedLinear.of(layer, f"{name} layer {i}"))
            elif isinstance(layer, nn.ReLU):
                self.steps.append("relu")
            else:
                raise TypeError(f"{name}: fixed-point evaluation knows Linear and ReLU layers, not "
                                f"{type(layer).__name__}")
        if not self.steps or self.steps[0] == "relu":
            raise TypeError(f"{name}: a fixed-point network starts with a Linear layer")

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Return the output for activations ``x`` (units of ``2**-ACT_BITS``): float64 values if the
        stack ends with a Linear layer, activations (units of ``2**-ACT_BITS``) if it ends with a ReLU."""
        h = x
        for step, following in pairwise([*self.steps, None]):
            if step == "relu":
                continue
            h = step(h)
            if following is not None:  # the next layer reads activations
                h = activations(h, relu=following == "relu")
        return h


_CACHE: weakref.WeakKeyDictionary[nn.Module, tuple[tuple, Any]] = weakref.WeakKeyDictionary()


def cached(module: nn.Module, build) -> Any:
    """Return ``build(module)``, built once per state of ``module``'s parameters (a training step or a
    ``load_state_dict`` builds it again)."""
    key = tuple((p.data_ptr(), p._version, p.dtype) for p in module.parameters())
    hit = _CACHE.get(module)
    if hit is None or hit[0] != key:
        hit = (key, build(module))
        _CACHE[module] = hit
    return hit[1]


def mlp_of(net: nn.Module) -> FixedMLP:
    """Return the fixed-point copy of a move network (an ``agents.solo.EndgameNet``: its ``mlp``)."""
    return cached(net, lambda n: FixedMLP(list(n.mlp), type(n).__name__))


def move_values(net: nn.Module, x: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Return float64 (M,) the values of moves ``x`` (M, n) by the move network ``net``, computed in
    fixed point: the same bits on every machine, whatever the batch."""
    return mlp_of(net)(quantize(x)).squeeze(-1)


def symmetric_move_values(net: nn.Module, x: np.ndarray | torch.Tensor, perms: np.ndarray) -> torch.Tensor:
    """Return float64 (M,) the mean of ``net``'s fixed-point values of the moves ``x`` (M, n) over the
    column orders ``perms`` (P, n), added in sorted order: two moves whose permuted inputs are the same
    rows get the same value to the bit."""
    xq = quantize(x)
    p = torch.as_tensor(perms)
    values = mlp_of(net)(xq[:, p].reshape(-1, xq.shape[1])).reshape(len(xq), len(p))
    values = torch.sort(values, dim=1).values
    total = values[:, 0].clone()
    for k in range(1, values.shape[1]):  # one addition at a time, in this order
        total += values[:, k]
    return total / len(p)


class FixedPolicy:
    """The policy head of an ``agents.neural.PolicyValueNet`` in fixed point: its logits."""

    def __init__(self, net: nn.Module):
        self.head = net.head
        self.torso = FixedMLP(list(net.torso), "torso") if len(net.torso) else None
        self.policy = FixedLinear.of(net.policy, "policy")
        if self.head == "moves":  # u = w + E^T q(z), then f_a . u (agents.neural.PolicyValueNet.forward)
            self.query = FixedLinear.of(net.move_query, "move_query")
            self.embed = FixedLinear(net.move_embed.weight.T, net.move_linear.weight[0], "move_embed")
        elif self.head == "moves_mlp":  # v . relu(W f_a + U q(z) + b)
            self.query = FixedLinear.of(net.move_query, "move_query")
            self.state = FixedLinear.of(net.move_state, "move_state")
            self.move_in = FixedLinear.of(net.move_in, "move_in")
            self.move_out = FixedLinear.of(net.move_out, "move_out")

    def logits(self, obs: np.ndarray, feats: np.ndarray | None) -> torch.Tensor:
        """Return float64 (B, A) logits of observations ``obs`` (B, n) with their move features
        ``feats`` (B, A, K) (None for the plain head)."""
        z = quantize(obs)
        if self.torso is not None:
            z = self.torso(z)
        out = self.policy(z)
        if self.head == "moves":
            u = activations(self.embed(activations(self.query(z), relu=False)), relu=False)  # (B, K)
            u_norm = float(torch.linalg.vector_norm(u, dim=1).max()) if u.numel() else 0.0
            out = out + exact_product(quantize(feats), u.unsqueeze(-1), ACT_BITS, ACT_BITS, u_norm,
                                      "move features").squeeze(-1)
        elif self.head == "moves_mlp":
            s = self.state(activations(self.query(z), relu=False))
            h = activations(self.move_in(quantize(feats)) + s.unsqueeze(1), relu=True)
            out = out + self.move_out(h).squeeze(-1)
        return out


def policy_logits(net: nn.Module, obs: np.ndarray, feats: np.ndarray | None) -> np.ndarray:
    """Return float64 (B, A) the fixed-point logits (unmasked) of a ``PolicyValueNet`` (``FixedPolicy``)."""
    return cached(net, FixedPolicy).logits(obs, feats).numpy()
