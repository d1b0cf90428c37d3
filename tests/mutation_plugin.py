"""A pytest plugin for mutation runs only (``scripts/mutation.sh``; loaded by ``[tool.mutmut]`` in
pyproject.toml): a program a test starts in a subprocess runs the code unmutated.

mutmut switches its mutants on inside the test process (the variable ``MUTANT_UNDER_TEST``). A program
started by a test inherits the variable and imports the mutated copy, whose switches look for mutmut's
configuration in the program's own folder, do not find it, and fail. With the variable taken out of
every child's environment the child runs the original code: a mutant that only a subprocess reaches
survives (mutmut counts only the calls a test makes in its own process anyway).
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

_POPEN_INIT = subprocess.Popen.__init__


def _popen_init(self: subprocess.Popen, *args: Any, env: Any = None, **kwargs: Any) -> None:
    """Start the child as asked, without ``MUTANT_UNDER_TEST`` in its environment."""
    env = dict(os.environ if env is None else env)
    env.pop("MUTANT_UNDER_TEST", None)
    _POPEN_INIT(self, *args, env=env, **kwargs)


subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]
