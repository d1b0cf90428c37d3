"""The engine's tests run on both of its steps: the NumPy reference and the compiled one.

Every test module here that builds engines (``ENGINE_MODULES``) runs twice, once with
``ESCOBA_ENGINE=numpy`` and once with ``ESCOBA_ENGINE=compiled`` (each with the other disabled: the
variable decides for every engine built and for ``sample_actions``). Without Numba the compiled run
is skipped, with its reason shown. ``test_game_differential`` names its executors itself
(``BATCHED_EXECUTORS``).
"""

from __future__ import annotations

import os

import pytest

from escoba_env import EscobaEngine
from escoba_env.executors import engine_compiled

ENGINE_MODULES = {
    "test_engine_bad_input", "test_engine_determinism", "test_engine_properties", "test_engine_reference",
    "test_engine_rules", "test_game_api", "test_last_play_escoba",
    "test_library_bad_types", "test_observation", "test_variants_engine",
}
STEPS = [
    "numpy",
    pytest.param("compiled", marks=pytest.mark.skipif(not engine_compiled.available(),
                                                      reason="Numba is not installed (the [fast] extra)")),
]


@pytest.fixture(scope="module", autouse=True)
def engine_step(request):
    """Set ``ESCOBA_ENGINE`` for the module's tests (where it is parametrized); yield the choice."""
    choice = getattr(request, "param", None)
    if choice is None:
        yield None
        return
    before = os.environ.get(engine_compiled.ENV_VAR)
    os.environ[engine_compiled.ENV_VAR] = choice
    try:
        assert EscobaEngine(1).compiled == (choice == "compiled")
        yield choice
    finally:
        if before is None:
            os.environ.pop(engine_compiled.ENV_VAR, None)
        else:
            os.environ[engine_compiled.ENV_VAR] = before


def pytest_generate_tests(metafunc):
    """Run every test of an engine module once per step (NumPy, compiled)."""
    if metafunc.module.__name__.rpartition(".")[2] in ENGINE_MODULES:
        metafunc.parametrize("engine_step", STEPS, indirect=True, scope="module")
