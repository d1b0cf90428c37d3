"""The command line of ``train.py``: one flag per ``Config`` field (generated from the dataclass and its
field docstrings) plus the rules flags every program of the project shares.

Why not ``tyro``, which builds the same from a dataclass: the parser must be the project's
``escoba_env.faces.cli.OneLineParser`` (a bad flag is one error line, never a usage dump or a rich
panel), share ``add_rules_arguments`` with every other program (``--players``, ``--sevens-rule``,
...: argparse actions), and leave unset flags out of the namespace (``argparse.SUPPRESS``) so that
``--resume`` overrides only the fields given; tyro owns its parser and fills every default. What
this module adds is ``field_docs`` (about 10 lines reading the docstring under each field) and the
type converters below.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tqdm.auto import tqdm

from escoba_env.faces.cli import OneLineParser, add_rules_arguments

from ..programs import program_name
from .config import Config
from .curve import write_curve
from .trainer import Trainer, TrainingInterrupted
from .workers import WorkerError


def field_docs(cls: type) -> dict[str, str]:
    """Return {field name: docstring} of a dataclass, read from the string under each field."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body
    docs: dict[str, str] = {}
    for a, b in zip(body, body[1:], strict=False):
        if (isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)):
            docs[a.target.id] = " ".join(b.value.value.split())
    return docs


def _parse_bool(s: str) -> bool:
    if s.lower() in ("1", "true", "yes", "on"):
        return True
    if s.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {s!r}")


def _optional(conv: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(s: str) -> Any:
        return None if s.lower() == "none" else conv(s)
    return parse


_CONVERTERS: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "str": str, "bool": _parse_bool}


_RULE_DEST = {"players": "num_players"}
"""Rules fields whose flag (from ``escoba_env.faces.cli.add_rules_arguments``) has another name."""


def build_parser() -> argparse.ArgumentParser:
    """Return the argparse parser of ``train.py``: one flag per Config field, and the rules flags."""
    parser = OneLineParser(
        prog=program_name("train.py"),
        description="PPO self-play training for Escoba (see agents/training/). escoba-train, "
                    "python -m agents.training and python train.py are the same program.",
        argument_default=argparse.SUPPRESS)
    docs = field_docs(Config)
    for f in dataclasses.fields(Config):
        if f.name == "rules":
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        typ = str(f.type)
        help_ = f"{docs.get(f.name, '')} (default: {default!r})".replace("%", "%%")
        if typ.startswith("tuple["):
            item = typ[len("tuple["):].split(",")[0].strip()
            parser.add_argument(flag, nargs="+", type=_CONVERTERS[item], help=help_, dest=f.name)
        elif typ == "bool":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, help=help_, dest=f.name)
        elif typ.endswith("| None"):
            parser.add_argument(flag, type=_optional(_CONVERTERS[typ.split("|")[0].strip()]), help=help_,
                                dest=f.name, metavar=typ.split("|")[0].strip().upper())
        else:
            parser.add_argument(flag, type=_CONVERTERS[typ], help=help_, dest=f.name)
    group = parser.add_argument_group("rules (passed to the env; defaults: escoba_env.Rules, docs/rules.md)")
    for action in add_rules_arguments(group):  # only the rules flags given override a resumed run's rules
        action.default = argparse.SUPPRESS
        action.dest = "rules." + _RULE_DEST.get(action.dest, action.dest)
    return parser


def config_from_args(argv: Sequence[str] | None = None) -> tuple[Config, list[str]]:
    """Return (Config, names of the fields given on the command line) for ``argv``."""
    ns = vars(build_parser().parse_args(argv))
    rules = {k[len("rules."):]: v for k, v in ns.items() if k.startswith("rules.")}
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in ns.items() if not k.startswith("rules.")}
    if rules:
        kw["rules"] = rules
    return Config(**kw), sorted(kw)


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def plan_line(plan: dict[str, int], asked: int) -> str:
    """Return the line printed before training: the steps after rounding to whole updates, the updates."""
    per, updates = plan["steps_per_update"], plan["updates"]
    rounded = "" if plan["end_step"] == max(asked, plan["start_step"]) else \
        f"; --total-steps {asked:,} rounded up to whole updates"
    start = f" from step {plan['start_step']:,}" if plan["start_step"] else ""
    return (f"plan: train to step {plan['end_step']:,}{start} in {updates:,} updates of {per:,} env steps"
            f"{rounded}, with {plan['evaluations']} evaluations")


def duration(seconds: float) -> str:
    """Return ``seconds`` as a short human duration: '45 s', '12 min', '3.4 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class _Estimate:
    """Training callback that prints, after the first update (the measured warm-up), the estimated time."""

    def __init__(self, plan: dict[str, int]):
        self.plan, self.done = plan, False

    def __call__(self, trainer: Trainer, stats: dict) -> None:
        """Print the estimate once, from the first update's and the last evaluation's duration."""
        if self.done:
            return
        self.done = True
        left = self.plan["updates"] - 1
        eval_s = getattr(trainer, "last_eval_s", 0.0) * self.plan["evaluations"]
        total = trainer.last_update_s * self.plan["updates"] + eval_s
        tqdm.write(f"estimate: about {duration(total)} in all (the first update took "
                   f"{trainer.last_update_s:.1f} s; {left:,} more to go)")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, train, print the summary; return the exit status.

    Bad input, a dying worker or a signal end the run with one line on stderr and a non-zero status
    (2, 1, 128 + the signal); a signal or a dying worker first saves the last completed update.
    """
    try:
        try:
            cfg, given = config_from_args(argv)
        except SystemExit as e:  # argparse has printed its one line (or the help)
            return e.code if isinstance(e.code, int) else 2
        if cfg.resume is None and "eval_interval" not in given and cfg.total_steps > 0:
            # by default a run evaluates at least ten times, so the bar and the curve have points
            cfg = dataclasses.replace(cfg, eval_interval=min(cfg.eval_interval, -(-cfg.total_steps // 10)))
        trainer = Trainer(cfg, given if cfg.resume is not None else None)
        plan = trainer.plan()
        print(plan_line(plan, trainer.cfg.total_steps), flush=True)  # a resumed run's own target
        summary = trainer.run(callback=_Estimate(plan))
    except TrainingInterrupted as e:
        print(f"{program_name('train.py')}: {_one_line(e)}", file=sys.stderr)
        return 128 + (signal.SIGTERM if "SIGTERM" in str(e) else signal.SIGINT)
    except KeyboardInterrupt:
        print(f"{program_name('train.py')}: interrupted before training started; nothing was saved",
              file=sys.stderr)
        return 128 + signal.SIGINT
    except WorkerError as e:
        print(f"{program_name('train.py')}: error: {_one_line(e)}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, OSError) as e:
        print(f"{program_name('train.py')}: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except (RuntimeError, MemoryError) as e:  # e.g. out of memory on the device
        print(f"{program_name('train.py')}: error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1
    print(f"trained to step {summary['global_step']:,} ({summary['updates']} updates, "
          f"{summary['wall_s']:.0f} s); checkpoint: {summary['checkpoint']}")
    for name, (m, lo, hi) in summary["eval"].items():
        print(f"  vs {name}: {m:+.3f} points/round [95% CI {lo:+.3f}, {hi:+.3f}]")
    curve = write_curve(trainer.run_dir)
    print(f"run folder: {trainer.run_dir}" + (f" (learning curve: {curve})" if curve else ""))
    if trainer.cfg.tensorboard:
        print(f"tensorboard --logdir {trainer.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
