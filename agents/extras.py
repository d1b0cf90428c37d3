"""What a command says about itself: the extra a missing library comes with, and the name it runs under.

A leaf module (standard library only), so every command line can import it without importing the
others (``agents.commands`` imports the programs lazily; the programs import this).
"""

from __future__ import annotations

import os
import sys

EXTRAS = {"torch": "agents", "tqdm": "agents", "matplotlib": "agents", "openskill": "agents",
          "tensorboard": "train", "ray": "ray", "PIL": "render", "pyspiel": "openspiel",
          "starlette": "web", "uvicorn": "web", "httpx": "web", "playwright": "webtest",
          "stable_baselines3": "examples", "sb3_contrib": "examples"}
"""Optional libraries -> the extra of ``escoba-env`` that installs them (``pyproject.toml``)."""


def missing_extra(exc: BaseException | None) -> str | None:
    """Return the one line that names the extra a missing module comes with, or None unless ``exc`` (or
    the error that caused it) is the ImportError of an optional library:
    ``torch is missing; it comes with the [agents] extra: pip install "escoba-env[agents]"``."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ImportError):
            top = (exc.name or "").split(".")[0]
            extra = EXTRAS.get(top)
            if extra is not None:
                return (f'{top} is missing; it comes with the [{extra}] extra: '
                        f'pip install "escoba-env[{extra}]"')
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def program_name(default: str) -> str:
    """Return the name the running program goes by: its console script's (``escoba-...``) or ``default``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name.startswith("escoba-") else default
