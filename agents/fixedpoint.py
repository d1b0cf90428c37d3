"""Fixed-point evaluation of the networks that choose moves: the same bits on every machine.

A float32 forward pass gives other last bits on another processor, another BLAS or another thread
count: a matrix product sums in an order that depends on the SIMD width and the blocking, and a row
of a batch can come out differently from the same row alone. Most decisions have a clear best move
and do not care; but two moves that are worth exactly the same (a symmetric network's values of two
suit-permuted moves) or nearly so are then split by rounding noise, so the same deal was played
differently on a machine with AVX-512 than on one without.

Here every network that decides a move is evaluated in integers instead:

- inputs and hidden activations are rounded to multiples of ``2**-ACT_BITS``, weights to multiples
  of ``2**-WEIGHT_BITS`` and biases to multiples of ``UNIT`` (``2**-(ACT_BITS + WEIGHT_BITS)``);
- a layer's output is then an integer number of ``UNIT``, and so is every partial sum of it, in
  whatever order a BLAS adds them; every such integer is below ``2**52`` (checked on each call:
  ``check_range``), and float64 holds every integer up to ``2**53`` exactly, so each product and
  each sum is exact. The float64 matrix product therefore returns the same integers under any
  instruction set, blocking, FMA use or thread count (it assumes a classical product, as every BLAS
  computes; a Strassen-like one would subtract entries first);
- a hidden activation (after its ReLU) is rounded half to even back to ``2**-ACT_BITS``: one IEEE
  operation on an exactly known number, the same everywhere.

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
"""A layer's outputs (and biases) are integer multiples of ``UNIT``."""
LIMIT = 2.0 ** 52
"""Every partial sum stays below ``LIMIT`` units (checked); float64 is exact for integers below 2**53."""
_TO_ACT = 2.0 ** -WEIGHT_BITS  # from UNIT to 2**-ACT_BITS: a power of two, so the product is exact


def quantize(x: np.ndarray | torch.Tensor, bits: int = ACT_BITS) -> torch.Tensor:
    """Return float64 integers: ``x`` in units of ``2**-bits``, rounded half to even."""
    t = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
    return torch.round(t.detach().to("cpu", torch.float64) * 2.0 ** bits)


def requantize(units: torch.Tensor, relu: bool) -> torch.Tensor:
    """Return a layer's outputs (integers of ``UNIT``) as activations in units of ``2**-ACT_BITS``,
    after a ReLU if ``relu``."""
    out = units.clamp_min(0.0) if relu else units * 1.0  # a new tensor: the caller's is left alone
    return out.mul_(_TO_ACT).round_()


def check_range(a: torch.Tensor, b_norm: float, b_abs: torch.Tensor, bias: float, where: str) -> None:
    """Raise ArithmeticError unless every partial sum of ``a @ b`` (+ bias) stays below ``LIMIT``.

    ``a`` (..., n) holds integers; ``b_norm`` is the largest Euclidean norm of a column of ``b``,
    ``b_abs`` is ``|b|`` (n, m) and ``bias`` the largest ``|bias|``. The Cauchy-Schwarz bound
    ``|a_i| |b_j|`` clears almost every row at the cost of a norm; a row it does not clear gets the
    exact bound ``|a_i| @ |b|``.
    """
    flat = a.reshape(-1, a.shape[-1])
    over = torch.linalg.vector_norm(flat, dim=1) * b_norm + bias >= LIMIT
    if bool(over.any()) and float((flat[over].abs() @ b_abs).max()) + bias >= LIMIT:
        raise ArithmeticError(f"{where}: a sum leaves the exact fixed-point range (an input or activation "
                              f"far larger than any seen in play); the move cannot be computed exactly")


class FixedLinear:
    """An ``nn.Linear`` (or a bare weight) in fixed point: integer weights (units ``2**-WEIGHT_BITS``)
    and bias (units ``UNIT``)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, name: str = "linear"):
        self.weight = quantize(weight, WEIGHT_BITS)  # (out, in)
        self.bias = None if bias is None else quantize(bias, ACT_BITS + WEIGHT_BITS)
        self.name = name
        self.w_t = self.weight.T.contiguous()
        self.w_abs = self.w_t.abs()
        norms = torch.linalg.vector_norm(self.weight, dim=1)
        self.w_norm = float(norms.max()) if norms.numel() else 0.0
        self.b_max = 0.0 if self.bias is None or not self.bias.numel() else float(self.bias.abs().max())

    @classmethod
    def of(cls, layer: nn.Linear, name: str = "linear") -> FixedLinear:
        """Return the fixed-point copy of ``layer``."""
        return cls(layer.weight, layer.bias, name)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Return ``x @ W.T + b`` in units of ``UNIT`` (exact) for activations ``x`` (..., in) in units
        of ``2**-ACT_BITS``."""
        check_range(x, self.w_norm, self.w_abs, self.b_max, self.name)
        if self.bias is None:
            return x @ self.w_t
        if x.ndim == 2:
            return torch.addmm(self.bias, x, self.w_t)
        return x @ self.w_t + self.bias


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

    def units(self, x: torch.Tensor) -> torch.Tensor:
        """Return the output for activations ``x`` (units of ``2**-ACT_BITS``): in units of ``UNIT`` if
        the stack ends with a Linear layer, in units of ``2**-ACT_BITS`` if it ends with a ReLU."""
        h = x
        for step, following in pairwise([*self.steps, None]):
            if step == "relu":
                continue
            h = step(h)
            if following is not None:  # the next layer reads activations
                h = requantize(h, relu=following == "relu")
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
    fixed point: multiples of ``UNIT``, the same on every machine."""
    out = mlp_of(net).units(quantize(x)).squeeze(-1)
    return out * UNIT


def symmetric_move_values(net: nn.Module, x: np.ndarray | torch.Tensor, perms: np.ndarray) -> torch.Tensor:
    """Return float64 (M,) the mean of ``net``'s fixed-point values of the moves ``x`` (M, n) over the
    column orders ``perms`` (P, n): the sum of P integers (exact in any order) divided by P, so two
    moves whose permuted inputs are the same rows get the same value to the bit."""
    xq = quantize(x)
    p = torch.as_tensor(perms)
    units = mlp_of(net).units(xq[:, p].reshape(-1, xq.shape[1])).reshape(len(xq), len(p))
    return units.sum(1) * UNIT / len(p)


def _batched_dot(f: torch.Tensor, u: torch.Tensor, where: str) -> torch.Tensor:
    """Return (B, A) in units of ``UNIT``: each row's features ``f`` (B, A, K) times its own vector
    ``u`` (B, K), both in units of ``2**-ACT_BITS`` (their product is in units of ``4 * UNIT``)."""
    bound = float(torch.linalg.vector_norm(f, dim=2).max()) * float(torch.linalg.vector_norm(u, dim=1).max())
    if f.numel() and bound >= LIMIT / 4 and float((f.abs() @ u.abs().unsqueeze(-1)).max()) >= LIMIT / 4:
        raise ArithmeticError(f"{where}: a sum leaves the exact fixed-point range")
    return torch.bmm(f, u.unsqueeze(-1)).squeeze(-1) * 4.0


class FixedPolicy:
    """The policy head of an ``agents.neural.PolicyValueNet`` in fixed point: its masked logits."""

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
        ``feats`` (B, A, K) (None for the plain head), multiples of ``UNIT``."""
        z = quantize(obs)
        if self.torso is not None:
            z = self.torso.units(z)
        out = self.policy(z)
        if self.head == "moves":
            u = requantize(self.embed(requantize(self.query(z), relu=False)), relu=False)
            out = out + _batched_dot(quantize(feats), u, "move features")
        elif self.head == "moves_mlp":
            s = self.state(requantize(self.query(z), relu=False))
            h = requantize(self.move_in(quantize(feats)) + s.unsqueeze(1), relu=True)
            out = out + self.move_out(h).squeeze(-1)
        return out * UNIT


def policy_logits(net: nn.Module, obs: np.ndarray, feats: np.ndarray | None) -> np.ndarray:
    """Return float64 (B, A) the fixed-point logits (unmasked) of a ``PolicyValueNet`` (``FixedPolicy``)."""
    return cached(net, FixedPolicy).logits(obs, feats).numpy()
