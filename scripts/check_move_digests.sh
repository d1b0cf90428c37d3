#!/usr/bin/env bash
# Check that the pinned move digests (tests/project/test_pinned_digests.py: every agent's moves, the
# move networks' inputs and the move features) hold under every CPU setting NumPy, PyTorch, MKL and
# OpenBLAS let a process force on this machine: the instruction sets they dispatch to, and the
# thread counts. One command, from anywhere:
#
#     bash scripts/check_move_digests.sh            # every setting (about 12 runs of half a minute)
#     bash scripts/check_move_digests.sh --quick    # three combined settings, the networks only (the suite's)
#
# Each setting runs the digest tests in a fresh Python process with the environment below and first
# prints what the libraries actually use there (NumPy's dispatched SIMD targets, ATen's capability,
# torch's threads), so a setting a library ignores shows. Ends with one line per setting and exits
# non-zero if any failed. PYTHON (default: python) names the interpreter.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
SELECT="moves_are_pinned or move_features or move_network_inputs"
# NumPy 2.4 names its x86 targets X86_V3 (AVX2), X86_V4 (AVX-512) and AVX512_ICL / AVX512_SPR; older
# NumPy names AVX2, AVX512F, AVX512_SKX...: both spellings are given (a name a NumPy does not know is
# ignored by it; np.show_runtime() shows what remains).
NPY_NO512="X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL"
NPY_V2="X86_V3 $NPY_NO512 AVX2 FMA3 F16C"
FULL=(
  "as installed|"
  "numpy without AVX-512|NPY_DISABLE_CPU_FEATURES=$NPY_NO512"
  "numpy without AVX2 or AVX-512|NPY_DISABLE_CPU_FEATURES=$NPY_V2"
  "ATen default (no SIMD)|ATEN_CPU_CAPABILITY=default"
  "ATen AVX2|ATEN_CPU_CAPABILITY=avx2"
  "ATen AVX-512|ATEN_CPU_CAPABILITY=avx512"
  "MKL AVX2 only|MKL_ENABLE_INSTRUCTIONS=AVX2"
  "MKL SSE4.2 only|MKL_ENABLE_INSTRUCTIONS=SSE4_2"
  "OpenBLAS Haswell kernels|OPENBLAS_CORETYPE=Haswell"
  "1 thread|OMP_NUM_THREADS=1;MKL_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1"
  "2 threads|OMP_NUM_THREADS=2;MKL_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2"
  "4 threads (oversubscribed)|OMP_NUM_THREADS=4;MKL_NUM_THREADS=4;OPENBLAS_NUM_THREADS=4"
)
QUICK=(
  "as installed|"
  "an AVX2 machine, 1 thread|NPY_DISABLE_CPU_FEATURES=$NPY_NO512;ATEN_CPU_CAPABILITY=avx2;MKL_ENABLE_INSTRUCTIONS=AVX2;OPENBLAS_CORETYPE=Haswell;OMP_NUM_THREADS=1;MKL_NUM_THREADS=1"
  "no SIMD beyond SSE4.2, 3 threads|NPY_DISABLE_CPU_FEATURES=$NPY_V2;ATEN_CPU_CAPABILITY=default;MKL_ENABLE_INSTRUCTIONS=SSE4_2;OPENBLAS_CORETYPE=Prescott;OMP_NUM_THREADS=3;MKL_NUM_THREADS=3"
)
case "${1:-}" in
  --quick) SETTINGS=("${QUICK[@]}"); SELECT="(moves_are_pinned and neural) or move_features or move_network_inputs" ;;
  "") SETTINGS=("${FULL[@]}") ;;
  *) echo "usage: bash scripts/check_move_digests.sh [--quick]" >&2; exit 2 ;;
esac
PROBE='import numpy as np, torch
umath = np._core._multiarray_umath
found = [t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t)] or ["its baseline only"]
cap, threads = torch.backends.cpu.get_cpu_capability(), torch.get_num_threads()
print(f"  numpy {np.__version__} dispatches to {found}; torch {torch.__version__}: ATen {cap}, {threads} threads")'
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
summary=()
for s in "${SETTINGS[@]}"; do
  name=${s%%|*}
  IFS=';' read -r -a vars <<< "${s#*|}"
  echo "== $name: ${vars[*]:-(no variable)}"
  env "${vars[@]}" "$PY" -c "$PROBE"
  env "${vars[@]}" "$PY" -m pytest tests/project/test_pinned_digests.py -q -p no:cacheprovider -k "$SELECT" \
    >"$log" 2>&1
  rc=$?
  grep -E "^(FAILED|ERROR)|passed|failed|error" "$log" | tail -n 12 | sed 's/^/  /'
  if [ "$rc" = 0 ]; then summary+=("ok      $name"); else summary+=("FAILED  $name"); failed=1; fi
done
echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
