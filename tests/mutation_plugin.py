"""A pytest plugin for mutation runs only (``scripts/mutation.sh``; loaded by ``[tool.mutmut]`` in
pyproject.toml): a program a test starts in a subprocess runs the code unmutated.

mutmut switches its mutants on inside the test process (the variable ``MUTANT_UNDER_TEST``). A program
started by a test inherits the variable and imports the mutated copy, whose switches look for mutmut's
configuration in the program's own folder, do not find it, and fail. With the variable taken out of
every child's environment the child runs the original code: a mutant that only a subprocess reaches
survives (mutmut counts only the calls a test makes in its own process anyway).

mutmut also runs each mutant's tests in a process forked (``os.fork``) from its own, which has run the
tests before (to learn which tests reach which function). A ``multiprocessing`` fork server started
there (the arena's bot pool starts one) is inherited as started but is not the child's own: its next
start fails (``ChildProcessError``, ``os.waitpid`` of a process that is not its child), no bot moves, a
room test waits out its time and every mutant it reaches reads "killed". The same goes for the arena's
process-wide bot pool (``bot_pool.shared_pool()``): inherited, its threads are gone (they do not cross a
fork) and its workers are the parent's, so a move given to it never runs. So each forked process forgets
both, and makes its own when it needs them (in its own environment: its bot workers run the mutant too).
"""

from __future__ import annotations

import multiprocessing.forkserver
import os
import subprocess
import sys
from typing import Any

_POPEN_INIT = subprocess.Popen.__init__


def _popen_init(self: subprocess.Popen, *args: Any, env: Any = None, **kwargs: Any) -> None:
    """Start the child as asked, without ``MUTANT_UNDER_TEST`` in its environment."""
    env = dict(os.environ if env is None else env)
    env.pop("MUTANT_UNDER_TEST", None)
    _POPEN_INIT(self, *args, env=env, **kwargs)


subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]


def _forget_inherited_pools() -> None:
    """In a process just forked: drop the parent's fork server and shared bot pool (see the module's text)."""
    # Looked up, not imported: the plugin must not import the library before mutmut has set up its copy.
    pools = sys.modules.get("escoba_arena.web.bot_pool")
    if pools is not None:
        pools._SHARED.clear()  # the next shared_pool() makes this process's own
    # The stdlib keeps one fork server per process, in a private singleton with no public way to reset it.
    server = multiprocessing.forkserver._forkserver
    alive = server._forkserver_alive_fd
    server.__init__()
    if alive is not None:
        try:
            os.close(alive)  # the child's copy only: the parent's server lives on
        except OSError:
            pass


os.register_at_fork(after_in_child=_forget_inherited_pools)
