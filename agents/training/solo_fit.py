"""Train the move networks of ``neural-solo`` (endgame or midgame): fit to labels, export the agent.

``--phase endgame`` (default): the labels come from ``python -m agents.training.distill --teacher endgame
--values`` (the exact minimax value of every legal action at an empty stock). ``--phase midgame``:
from ``--teacher search --values`` (the search's mean rollout value of every action; only the
decisions taken while the stock lasts are used). The network (``agents.nets.solo.EndgameNet`` on the
phase's inputs) scores moves; an action's value is the best of its moves'. ``--loss mse`` regresses
the action values onto the teacher's; ``--loss adv`` the same relative to each decision's mean
error (only differences between moves count); ``--loss ce`` is the cross-entropy of the action
values (as logits) to the teacher's best actions. After every epoch it prints the held-out share
of decisions where it picks a best action and its mean regret (points per decision); the
checkpoint records that curve (``scripts/plot_solo_curve.py`` draws it). ``--out`` writes the
phase-gated checkpoint (never overwrites a file): with ``--phase endgame`` the plain network
``--plain`` before the endgame and this network after it; with ``--phase midgame`` the plain and
endgame networks of ``--solo`` plus this one, which then plays while the stock lasts. ``--init
FILE`` starts from the network of the phase stored in FILE instead of fresh weights (fine-tuning on
new labels)::

    python -m agents.training.distill --out runs/labels/endgame_200k.npz --labels 200000 --values \\
        --teacher endgame --seed 41 --behaviour neural-2p-plain expert greedy \\
        --weights 0.5 0.35 0.15
    python -m agents.training.solo_fit runs/labels/endgame_200k.npz --test runs/labels/endgame_test20k.npz \\
        --out runs/solo_endgame.pt
    python -m agents.training.distill --out runs/labels/mid.npz --labels 30000 --values \\
        --teacher search:sims=500 --seed 1000 --behaviour neural-2p-plain expert greedy \\
        --weights 0.5 0.35 0.15
    python -m agents.training.solo_fit runs/labels/mid.npz --phase midgame --solo runs/solo_endgame.pt \\
        --loss adv \\
        --out runs/solo_mid.pt

``scripts/reproduce_neural_solo.sh`` runs the whole recipe of the shipped agent.

``--phase table`` fits the one move network of a 3-player or 2v2 table (``agents.nets.tablenet``) on
every decision; ``--phase last`` a last-deal network on the decisions taken once the stock is empty
(labels of ``python -m agents.training.distill --last-deal``), written beside the move network of ``--base``
(``--init`` may start it from that move network); with ``--answers`` it also reads what each unseen
card would take on the table a move leaves (``agents.nets.tablenet.last_input_names``); ``--phase midgame
--answers`` gives ``neural-solo``'s midgame network the same four blocks
(``agents.nets.solo.MIDGAME_ANSWER_INPUTS``); ``--stock N``
fits a midgame network on the decisions taken with N cards in the stock only (one deal of the round).
``--symmetric``
writes a move file that plays its values averaged over the plain suits' permutations, and scores the
held-out regret that way.
``scripts/reproduce_table_net.sh`` runs the move networks' recipe.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, NamedTuple

import numpy as np
import torch

from escoba_env.faces.cli import OneLineParser, positive_float, positive_int, seed_arg
from escoba_env.rulebook.rules import Rules

from ..heuristic.endgame import endgame_rows
from ..moves import Moves, best_per_row, move_actions
from ..nets.neural import NeuralAgent, load_checkpoint, save_checkpoint
from ..nets.shipped import (
    MOVE_CHECKPOINTS,
    PLAIN_CHECKPOINT,
    SOLO_CHECKPOINT,
    package_file,
    shipped_checkpoint,
)
from ..nets.solo import (
    ENDGAME_INPUTS,
    MIDGAME_INPUTS,
    EndgameNet,
    SoloAgent,
    action_values,
    build_endgame_net,
    endgame_inputs,
    midgame_input_names,
    midgame_inputs,
    solo_checkpoint_dict,
    suit_permutations,
    symmetric_values,
)
from ..nets.tablenet import (
    build_move_net,
    input_blocks,
    last_input_names,
    move_checkpoint_dict,
    table_input_names,
    table_inputs,
)
from ..worlds import observation_scalars
from .distill import action_regret, load_labels

PHASES = {"endgame": (endgame_inputs, ENDGAME_INPUTS), "midgame": (midgame_inputs, MIDGAME_INPUTS),
          "table": (table_inputs, None), "last": (table_inputs, None)}
"""Per phase: the input function and the input names of its network (``table`` and ``last``: they
depend on the table, ``agents.nets.tablenet.table_input_names``)."""


def input_set(answers: bool = False) -> str:
    """Return the name of the input set ``--answers`` chooses (``agents.nets.solo.MIDGAME_SETS`` for the
    midgame network; the last-deal network knows ``"answers"``, the others only the default)."""
    return "answers" if answers else "plain"


def input_names(phase: str, rules, answers: bool = False) -> tuple[str, ...]:
    """Return the input names of ``phase``'s network for games of ``rules`` (``answers``: the larger set
    with the answer inputs, ``agents.nets.solo.MIDGAME_ANSWER_INPUTS`` or
    ``agents.nets.tablenet.last_input_names``)."""
    if phase == "midgame":
        return midgame_input_names(input_set(answers))
    if answers:
        return last_input_names(rules, "answers")
    names = PHASES[phase][1]
    return table_input_names(rules) if names is None else names


def _labels_table_network(path: str, kind: str = "table") -> str:
    """Return the shipped network of the table a labels file was collected at: its PPO network
    (``--phase table``, ``kind="table"``) or its move network (``--phase last``, ``kind="move"``)."""
    rules = Rules.from_dict(load_labels(path)[1]["rules"])
    if kind == "move":
        named = MOVE_CHECKPOINTS.get((rules.num_players, rules.partnerships))
        if named is None:
            raise ValueError(f"no shipped move network plays {rules}; name one with --base")
        return str(package_file(named))
    ckpt = shipped_checkpoint(rules)
    if ckpt is None:
        raise ValueError(f"no shipped network plays {rules}; name one with --plain")
    return str(ckpt)


def prepare(paths: list[str], rules, limit: int | None = None, phase: str = "endgame",
            answers: bool = False, chunk: int = 100_000, x_dtype=np.float32,
            stock: int | None = None) -> dict:
    """Return the labels of ``paths``, concatenated, with every move's inputs (``endgame_inputs``).

    ``phase="midgame"``: only the decisions taken while the stock lasts, with ``midgame_inputs``
    (labels with values from ``--teacher search``); ``"endgame"``: every label must be an endgame one;
    ``"table"``: every decision, with ``agents.nets.tablenet.table_inputs`` (any table, search labels);
    ``"last"``: the same for the decisions taken once the stock is empty (the round's last deal), with
    ``answers`` the larger input set of ``agents.nets.tablenet.last_input_names(rules, "answers")`` (with
    ``"midgame"``: ``agents.nets.solo.midgame_inputs(..., inputs="answers")``).
    ``blocks`` in the result: how many 40-card blocks start the inputs (the suit permutations').
    The inputs are built ``chunk`` decisions at a time (the same values as all at once, with a
    bounded transient memory) and stored as ``x_dtype`` (``np.float16`` halves the memory of a large
    fit: every input is a 0/1 flag or a fraction, kept to about 4e-4, and the observations then stay
    in the labels' float16). ``stock`` (``"midgame"`` only): keep only the decisions taken with that
    many cards in the stock (one deal of the round, e.g. 6: the deal before the last at 2 players).
    """
    parts = [load_labels(p, rules)[0] for p in paths]
    how = ("--teacher endgame --values" if phase == "endgame" else "--teacher search --values")
    if any("values" not in a for a in parts):
        raise ValueError(f"{' '.join(paths)}: needs the values of every legal action (labels from "
                         f"python -m agents.training.distill {how})")
    arrays = {k: np.concatenate([a[k] for a in parts]) for k in ("obs", "mask", "values")}
    path = " ".join(paths)
    if chunk < 1:
        raise ValueError(f"chunk must be a positive number of decisions, got {chunk}")
    if stock is not None and (phase != "midgame" or stock < 1):
        raise ValueError("a stock size (--stock) selects midgame decisions: --phase midgame and a size of "
                         "1 or more")
    if phase in ("midgame", "last"):
        arrays = _phase_decisions(arrays, rules, phase, stock, chunk, path)
    n = len(arrays["obs"]) if limit is None else min(limit, len(arrays["obs"]))
    obs = arrays["obs"][:n]
    mask = arrays["mask"][:n]
    if answers and phase not in ("last", "midgame"):
        raise ValueError("the answer inputs are for the last-deal or midgame network (--phase last, midgame)")
    inputs = input_set(answers)
    moves, x, member = _move_inputs(obs, mask, rules, phase, answers, chunk, x_dtype)
    if np.dtype(x_dtype) != np.float16:
        obs = obs.astype(np.float32)
    values = arrays["values"][:n].astype(np.float32)
    labelled = (mask > 0) & np.isfinite(values)
    # A search teacher values each move under its first action, so during a capture choice the other
    # table cards of a multi-card option carry no value of their own: they are left out of the loss.
    complete = (labelled == (mask > 0)).all() if phase == "endgame" else labelled.any(axis=1).all()
    if not complete:
        raise ValueError(f"{path}: needs the values of every legal action (labels from "
                         f"python -m agents.training.distill {how})")
    return {"obs": obs, "mask": mask, "values": values, "moves": moves, "x": x, "member": member,
            "labelled": labelled,
            "blocks": input_blocks("table" if inputs == "plain" else inputs)}


def _spans(n: int, chunk: int) -> list[tuple[int, int]]:
    """Return the (start, end) rows of ``n`` decisions cut ``chunk`` at a time."""
    return [(i, min(i + chunk, n)) for i in range(0, n, chunk)]


def _phase_decisions(arrays: dict, rules, phase: str, stock: int | None, chunk: int, path: str) -> dict:
    """Return the labels ``arrays`` kept to ``phase``'s decisions (``"midgame"``: while the stock lasts,
    with ``stock`` cards in it if given; ``"last"``: once it is empty); ValueError if none is left."""
    o = arrays["obs"]
    spans = _spans(len(o), chunk)
    if phase == "midgame":
        keep = np.concatenate([~endgame_rows(o[i:j].astype(np.float32), rules) for i, j in spans])
        if stock is not None:
            keep &= np.concatenate([observation_scalars(o[i:j].astype(np.float32), rules)["stock"]
                                    for i, j in spans]) == stock
    else:
        keep = np.concatenate([observation_scalars(o[i:j].astype(np.float32), rules)["stock"] == 0
                               for i, j in spans])
    if not keep.any():
        when = "while the stock lasts" if phase == "midgame" else "once the stock is empty"
        when = f"with {stock} cards in the stock" if stock is not None else when
        raise ValueError(f"{path}: holds no decision taken {when}")
    return {k: v[keep] for k, v in arrays.items()}


def _move_inputs(obs: np.ndarray, mask: np.ndarray, rules, phase: str, answers: bool, chunk: int,
                 x_dtype) -> tuple[Moves, np.ndarray, np.ndarray]:
    """Return (moves, inputs as ``x_dtype``, each move's member rows) of ``phase``'s network for the
    decisions ``obs``, built ``chunk`` decisions at a time."""
    if phase == "midgame":
        inputs = input_set(answers)

        def build(o, m):
            return midgame_inputs(o, rules, m, inputs=inputs)
    else:
        build = ((lambda o, m: PHASES[phase][0](o, rules, m, answers=True)) if answers
                 else (lambda o, m: PHASES[phase][0](o, rules, m)))
    spans = _spans(len(obs), chunk)
    parts = []
    for i, j in spans:
        mv, xc, mem = build(obs[i:j].astype(np.float32), mask[i:j])
        parts.append((mv, xc.astype(x_dtype, copy=False), mem))
        del xc
    moves = _join_moves([p[0] for p in parts], [i for i, _ in spans])
    x = parts[0][1] if len(parts) == 1 else np.concatenate([p[1] for p in parts])
    member = parts[0][2] if len(parts) == 1 else np.concatenate([p[2] for p in parts])
    return moves, x, member


def _join_moves(parts: list, first_rows: list[int]):
    """Return one ``agents.moves.Moves`` of consecutive chunks (``first_rows``: each chunk's first row)."""
    if len(parts) == 1:
        return parts[0]

    shift = np.concatenate([[0], np.cumsum([p.start[-1] for p in parts])[:-1]])
    start = np.concatenate([p.start[:-1] + s for p, s in zip(parts, shift, strict=True)]
                           + [[shift[-1] + parts[-1].start[-1]]])
    return Moves(np.concatenate([p.row + r for p, r in zip(parts, first_rows, strict=True)]),
                 np.concatenate([p.card for p in parts]), np.concatenate([p.option for p in parts]),
                 start.astype(parts[0].start.dtype))


def evaluate(net: EndgameNet, d: dict, symmetric: bool = False) -> tuple[float, float]:
    """Return (share of decisions where the net picks a best action, mean regret in points);
    ``symmetric``: the net's values averaged over the plain suits' permutations, as it then plays."""
    with torch.no_grad():
        x = torch.from_numpy(d["x"]).float()
        v = (symmetric_values(net, x, d.get("blocks", 5)) if symmetric else net(x)).numpy()
    act = move_actions(d["moves"], best_per_row(d["moves"], v), d["obs"], d["mask"])
    regret = action_regret(d["values"], d["mask"], act)  # a move's first action is always valued
    return float(np.mean(regret <= 1e-6)), float(np.mean(regret))


def batch_moves(start: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (move indices, their batch row) of the observations ``rows``."""
    counts = start[rows + 1] - start[rows]
    offsets = np.repeat(start[rows] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return offsets + np.arange(counts.sum()), np.repeat(np.arange(len(rows)), counts)


def train(net: EndgameNet, d: dict, test: dict | None, *, epochs: int, lr: float, batch: int, loss: str,
          seed: int, augment: bool = True, phase: str = "endgame", symmetric: bool = False
          ) -> list[dict[str, float]]:
    """Fit ``net`` to the labels ``d`` (Adam, learning rate decayed linearly to 0), printing progress
    per epoch; ``augment`` permutes the three plain suits of each minibatch at random. Return one
    row per epoch: ``epoch``, ``loss``, ``wall_s`` and, with ``test``, ``best_share`` and ``regret``."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    n = len(d["obs"])
    steps = epochs * ((n + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1.0 - s / steps))
    x_all = torch.from_numpy(d["x"])
    legal_all = d["labelled"]
    vals = np.where(legal_all, d["values"], 0.0).astype(np.float32)
    best = np.where(legal_all, d["values"], -np.inf).max(axis=1, keepdims=True)
    is_best = legal_all & (d["values"] >= best - 1e-6)
    curve: list[dict[str, float]] = []
    target_ce = (is_best / is_best.sum(axis=1, keepdims=True)).astype(np.float32)
    for epoch in range(epochs):
        t0, total = time.perf_counter(), 0.0
        net.train()
        for rows in np.array_split(rng.permutation(n), (n + batch - 1) // batch):
            mi, br = batch_moves(d["moves"].start, rows)
            x = x_all[torch.as_tensor(mi)].float()
            if augment:
                perms = suit_permutations(x.shape[1], d.get("blocks", 5))
                x = x[:, torch.as_tensor(perms[rng.integers(len(perms))])]
            q = action_values(net(x), br, d["member"][mi], len(rows))
            legal = torch.as_tensor(legal_all[rows])
            if loss in ("mse", "adv"):
                err = torch.where(legal, q - torch.as_tensor(vals[rows]), 0.0)
                if loss == "adv":  # the error of each action relative to the row's mean error
                    n_legal = legal.sum(1, keepdim=True)
                    err = torch.where(legal, err - err.sum(1, keepdim=True) / n_legal, 0.0)
                value = (err ** 2).sum() / legal.sum()
            else:
                logp = torch.log_softmax(q.masked_fill(~legal, -1e9), dim=1)
                value = -(torch.as_tensor(target_ce[rows]) * logp.clamp_min(-1e4)).sum(1).mean()
            opt.zero_grad()
            value.backward()
            opt.step()
            sched.step()
            total += value.item() * len(rows)
        net.eval()
        line = f"epoch {epoch + 1}/{epochs}: {loss} {total / n:.4f}"
        curve.append({"epoch": epoch + 1, "loss": total / n, "wall_s": time.perf_counter() - t0})
        if test is not None:
            share, regret = evaluate(net, test, symmetric)
            line += f", held-out: a best action in {share:.1%} of decisions, regret {regret:.4f} points"
            curve[-1].update(best_share=share, regret=regret)
        print(line + f" ({time.perf_counter() - t0:.0f} s)", flush=True)
    return curve


def build_parser() -> OneLineParser:
    """Return the command line's argument parser."""
    ap = OneLineParser(prog="python -m agents.training.solo_fit", description=__doc__.split("\n\n")[0])
    ap.add_argument("labels", nargs="+",
                    help="training label files (python -m agents.training.distill --teacher endgame "
                         "--values)")
    ap.add_argument("--test", default=None, help="held-out labels, scored after every epoch")
    ap.add_argument("--plain", default=None,
                    help="the network that plays before the endgame (--phase endgame; default the shipped "
                         "2-player plain network) or, --phase table, the table's network whose rules the "
                         "move "
                         "network takes and which its checkpoint keeps (default: the shipped network of "
                         "the labels' table)")
    ap.add_argument("--phase", choices=tuple(PHASES), default="endgame",
                    help="train the endgame network, the midgame network that replaces the plain one "
                         "while the stock lasts (on labels of --teacher search --values), or (table) the "
                         "one move network that plays every decision at any table (agents.nets.tablenet)")
    ap.add_argument("--solo", default=SOLO_CHECKPOINT,
                    help="--phase midgame: the phase-gated checkpoint whose plain and endgame networks "
                         "the written checkpoint keeps")
    ap.add_argument("--hidden", type=positive_int, nargs="+", default=[256, 256])
    ap.add_argument("--loss", choices=("mse", "adv", "ce"), default="mse")
    ap.add_argument("--epochs", type=positive_int, default=10)
    ap.add_argument("--lr", type=positive_float, default=1e-3)
    ap.add_argument("--batch", type=positive_int, default=512, help="decisions per minibatch")
    ap.add_argument("--limit", type=positive_int, default=None, help="use the first N training labels")
    ap.add_argument("--stock", type=positive_int, default=None,
                    help="--phase midgame: fit (and score) only the decisions taken with this many cards in "
                         "the stock, one deal of the round (6: the deal before the last at 2 players); the "
                         "written file still plays that network at every midgame decision")
    ap.add_argument("--seed", type=seed_arg, default=0)
    ap.add_argument("--no-augment", action="store_true", help="do not permute the plain suits")
    ap.add_argument("--base", default=None,
                    help="--phase last: the move-network file whose move network plays while the stock "
                         "lasts; the written file is it plus the last-deal network, its symmetric play kept "
                         "(default: the shipped move network of the labels' table)")
    ap.add_argument("--answers", action="store_true",
                    help="--phase last or midgame: the network also reads what each unseen card would "
                         "take on the table each move leaves (agents.nets.tablenet.last_input_names, "
                         "agents.nets.solo.MIDGAME_ANSWER_INPUTS)")
    ap.add_argument("--float16", action="store_true",
                    help="keep the training inputs in float16 (half the memory of a large fit; each is a 0/1 "
                         "flag or a fraction, kept to about 4e-4); they are built 100k decisions at a time")
    ap.add_argument("--symmetric", action="store_true",
                    help="--phase table or last: the written network plays its values averaged over the plain"
                         " suits' permutations (the checkpoint's move_play), and the held-out regret is "
                         "scored that way")
    ap.add_argument("--out", default=None, help="write the phase-gated checkpoint here (never overwrites)")
    ap.add_argument("--init", default=None,
                    help="start from the network of this phase in a checkpoint (fine-tuning; its hidden "
                         "sizes replace --hidden): a neural-solo file (--phase endgame or midgame) or a "
                         "move-network file (--phase table; --phase last: its last-deal network, else its "
                         "move network)")
    return ap


def _refusal(args) -> str | None:
    """Return why the options ``args`` cannot go together (before any file is read), or None."""
    if args.symmetric and args.phase not in ("table", "last"):
        return "--symmetric is for --phase table or last (the move networks)"
    if args.base and args.phase != "last":
        return "--base is for --phase last"
    if args.answers and args.phase not in ("last", "midgame"):
        return "--answers is for --phase last or midgame"
    if args.stock and args.phase != "midgame":  # refused before any label file is read
        return "--stock is for --phase midgame"
    if args.out and os.path.exists(args.out):
        return f"{args.out} already exists; choose another --out"
    return None


class _Start(NamedTuple):
    """The networks a fit starts from: the one that plays before it, the endgame network (``--phase
    midgame``), and for ``--phase table``/``last`` the table network's file or the base move network."""

    plain: NeuralAgent
    endgame: EndgameNet | None
    plain_path: str | None = None
    base_ckpt: dict | None = None
    move_net: Any = None


def _start(args) -> _Start:
    """Return the networks ``args`` name (filling ``args.base``/``args.plain`` with the defaults)."""
    if args.phase == "midgame":
        base = SoloAgent.from_checkpoint(args.solo)
        return _Start(base.plain, base.endgame)
    if args.phase == "table":
        plain_path = args.plain or _labels_table_network(args.labels[0])
        return _Start(NeuralAgent.from_checkpoint(plain_path), None, plain_path=plain_path)
    if args.phase == "last":
        args.base = args.base or _labels_table_network(args.labels[0], "move")
        base_ckpt = load_checkpoint(args.base, map_location="cpu")
        plain = NeuralAgent.from_checkpoint(args.base)
        move_net = build_move_net(base_ckpt, plain.rules, args.base)
        return _Start(plain, None, base_ckpt=base_ckpt, move_net=move_net)
    args.plain = args.plain or PLAIN_CHECKPOINT
    return _Start(NeuralAgent.from_checkpoint(args.plain), None)


def _new_net(args, need: int) -> EndgameNet:
    """Return the network to fit: ``--init``'s network of the phase (its hidden sizes then replace
    ``args.hidden``), else a fresh one of ``need`` inputs."""
    if not args.init:
        return EndgameNet(args.hidden, need)
    init = load_checkpoint(args.init, map_location="cpu")
    phase = args.phase
    if phase == "table" or (phase == "last" and "last_net" not in init):
        phase = "move"  # a last-deal network may start from a move network
    net = build_endgame_net(init, args.init, phase, need=need)
    args.hidden = list(net.net_config()["hidden"])
    return net


def _checkpoint(args, start: _Start, net: EndgameNet, how: dict) -> dict:
    """Return the checkpoint dict to write: the fitted ``net`` in the file of its phase."""
    play = {"move_play": {"symmetric": True}} if args.symmetric else {}
    if args.phase == "table":
        return move_checkpoint_dict(start.plain, net, move_training={**how, "plain": start.plain_path},
                                    **play)
    if args.phase == "last":
        kept = {k: start.base_ckpt[k] for k in ("move_training", "move_play") if k in start.base_ckpt}
        inputs = {"last_inputs": "answers"} if args.answers else {}
        return move_checkpoint_dict(start.plain, start.move_net, last=net, **{**kept, **play, **inputs},
                                    last_training={**how, "base": args.base})
    if start.endgame is None:
        return solo_checkpoint_dict(start.plain, net, solo_training={**how, "plain": args.plain})
    base_how = load_checkpoint(args.solo).get("solo_training")
    chosen = input_set(args.answers)
    inputs = {"midgame_inputs": chosen} if chosen != "plain" else {}
    return solo_checkpoint_dict(start.plain, start.endgame, midgame=net, solo_training=base_how,
                                midgame_training={**how, "solo": args.solo}, **inputs)


def _fit(args) -> None:
    """Load the labels and the starting networks, fit, and write ``--out`` if given."""
    if args.out:  # a folder that cannot be made fails now, not after the training
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    start = _start(args)
    t0 = time.perf_counter()
    data = prepare(args.labels, start.plain.rules, args.limit, args.phase, args.answers,
                   x_dtype=np.float16 if args.float16 else np.float32, stock=args.stock)
    test = None if not args.test else prepare([args.test], start.plain.rules, phase=args.phase,
                                              answers=args.answers, stock=args.stock)
    held = f", {len(test['obs'])} held out" if test else ""
    print(f"{len(data['obs'])} training decisions ({len(data['x'])} moves){held}; "
          f"inputs in {time.perf_counter() - t0:.0f} s", flush=True)
    torch.manual_seed(args.seed)
    net = _new_net(args, len(input_names(args.phase, start.plain.rules, args.answers)))
    t0 = time.perf_counter()
    curve = train(net, data, test, epochs=args.epochs, lr=args.lr, batch=args.batch, loss=args.loss,
                  seed=args.seed, augment=not args.no_augment, phase=args.phase,
                  symmetric=args.symmetric)
    wall = time.perf_counter() - t0
    print(f"trained in {wall:.0f} s")
    if not args.out:
        return
    if os.path.exists(args.out):  # made while this run trained: still never overwritten
        raise ValueError(f"{args.out} appeared during training; choose another --out")
    how = {"labels": list(args.labels), "loss": args.loss, "epochs": args.epochs, "lr": args.lr,
           "batch": args.batch, "seed": args.seed, "limit": args.limit, "wall_s": wall,
           "augment": not args.no_augment, "hidden": args.hidden, "test": args.test, "curve": curve,
           "decisions": len(data["obs"]), "init": args.init, "float16": args.float16,
           "stock": args.stock}
    save_checkpoint(args.out, _checkpoint(args, start, net, how))
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.2f} MB)")


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, train, evaluate, export; return the exit code."""
    args = build_parser().parse_args(argv)
    refused = _refusal(args)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    try:
        _fit(args)
    except (ValueError, OSError) as e:  # bad labels, a missing file, an unwritable --out
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted; nothing written", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
