#!/usr/bin/env bash
# Smoke test of the wheel as a new user gets it: build it, install it with [all] into a fresh venv
# (torch pinned first), then from an empty folder outside the checkout run a tournament with a
# shipped network by name, a tiny training run, the terminal game and the web arena.
# Usage: .ci/wheel_smoke.sh [PYTHON]   (default python3; run from anywhere)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${1:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "wheel smoke: building in $WORK"
"$PY" -m venv "$WORK/build-venv"
"$WORK/build-venv/bin/pip" install -q "setuptools>=77" wheel
# The build must not warn about deprecated settings (e.g. the license table).
"$WORK/build-venv/bin/pip" wheel -v --no-deps --no-build-isolation -w "$WORK/dist" "$ROOT" > "$WORK/build.log" 2>&1 \
  || { tail -20 "$WORK/build.log"; exit 1; }
if grep -iE "deprecat|SetuptoolsWarning" "$WORK/build.log"; then
  echo "wheel smoke: the build printed a deprecation warning" >&2; exit 1
fi
WHEEL="$(ls "$WORK"/dist/escoba_env-*.whl)"
echo "== plain install (no extra: no Numba, the NumPy engine)"
"$PY" -m venv "$WORK/plain"
"$WORK/plain/bin/pip" install -q "$WHEEL"
mkdir "$WORK/plain-run" && (cd "$WORK/plain-run" && "$WORK/plain/bin/python" - <<'PY'
import importlib.util

import gymnasium
import numpy as np

from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions

assert importlib.util.find_spec("numba") is None, "a plain install brought Numba"
e = EscobaEngine(8, Rules())
assert not e.compiled, "the engine claims the compiled step without Numba"
e.reset(1)
rng = np.random.default_rng(0)
while not e.done.all():
    e.step(sample_actions(e.legal, rng.random(8)))
env = gymnasium.make("escoba_env/Escoba-v0", opponents="random")
obs, info = env.reset(seed=3)
done = False
while not done:
    action = int(np.flatnonzero(obs["action_mask"])[0])
    obs, reward, term, trunc, info = env.step(action)
    done = term or trunc
print("plain install: 8 engine games to", e.scores.max(axis=1).tolist(), "and one gymnasium game, winner",
      info["winner"])
PY
)
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q torch==2.13.0
"$WORK/venv/bin/pip" install -q "$WHEEL[all]"
BIN="$WORK/venv/bin"
mkdir "$WORK/elsewhere" && cd "$WORK/elsewhere"
# No checkout on sys.path: the packages come from the venv's site-packages.
"$BIN/python" -c "import agents, escoba_env, sys; assert 'site-packages' in agents.__file__, agents.__file__; print('agents from', agents.__file__)"
echo "== [all]: the compiled engine, compiled once"
# The first process compiles the kernels into Numba's cache; a second one loads them (no compilation).
for run in first second; do
  "$BIN/python" - "$run" <<'PY'
import sys

import numpy as np

from escoba_env import EscobaEngine, Rules
from escoba_env.executors import engine_compiled
from escoba_env.executors.engine import sample_actions

e = EscobaEngine(4, Rules())
assert e.compiled, "[all] installed no compiled engine"
e.reset(0)
e.step(sample_actions(e.legal, np.zeros(4)))
hits = sum(engine_compiled.kernels().step_games.stats.cache_hits.values())
print("compiled engine,", sys.argv[1], "process: cache hits", hits)
assert sys.argv[1] == "first" or hits > 0, "the second process compiled the step again"
PY
done
echo "== escoba-evaluate"
"$BIN/escoba-evaluate" --agents random neural-2p --rounds 20
test -s results/evaluation.json
echo "== escoba-bench"
"$BIN/escoba-bench" digest | tee bench.log
grep -q "c648d611443767a4f67a8e594f7414459406a1088c5e4724ca6c7c1a79e912ba" bench.log
"$BIN/python" -c "from agents.bench.card import load_reference; assert load_reference('v1', '2p', True), 'panel reference missing from the wheel'"
echo "== escoba-train"
"$BIN/escoba-train" --run-name smoke --total-steps 3000 --num-envs 64 --num-steps 16 --eval-interval 0 \
  --no-progress --no-tensorboard | tee train.log
grep -q "plan: train to step 3,072 in 3 updates of 1,024 env steps" train.log
test -s runs/smoke/checkpoints/latest.pt
echo "== escoba-play"
printf '1\n1\n1\nq\n' | "$BIN/escoba-play" --no-color --seed 3 | tee play.log
grep -q "Opponent: neural-2p" play.log
echo "== escoba-arena"
"$BIN/escoba-arena" --host 127.0.0.1 --port 0 > arena.log 2>&1 &
ARENA=$!
for _ in $(seq 1 100); do grep -q "http://127.0.0.1:" arena.log && break; sleep 0.2; done
URL="$(grep -o 'http://127.0.0.1:[0-9]*/' arena.log | head -1)"
test -n "$URL" || { cat arena.log; kill "$ARENA"; exit 1; }
"$BIN/python" - "$URL" <<'PY'
import json, sys, urllib.request
url = sys.argv[1] + "api/games"
req = urllib.request.Request(url, data=json.dumps({"seed": 1}).encode(), method="POST",
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=60) as r:
    body = json.load(r)
print("arena answered", r.status, body["view"]["names"])
assert r.status == 201 and body["view"]["names"][0] == "You"
PY
kill "$ARENA"; wait "$ARENA" || true
echo "wheel smoke: ok"
