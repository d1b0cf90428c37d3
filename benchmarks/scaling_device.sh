#!/usr/bin/env bash
# The many-core scaling run of the trainer (issue 16), in one shot, on a machine with a CUDA GPU and
# 16 cores: benchmarks/bench_train.py with the learner on the GPU and 1, 2, 4, 8 and 16 rollout
# workers (synchronous, plus 16 workers overlapped), beside the CPU-only trainer with 1 worker (the
# one-process trainer) and 16 workers. Both the pure self-play and the default league, 8,192 games
# (512 per worker at 16), 2 measured updates per row; then the PPO update alone on the GPU
# (benchmarks/bench_update.py, the defaults). Estimated at about 5 minutes there (never run yet).
#
#   bash benchmarks/scaling_device.sh                 # writes docs/measurements/bench_train_scaling_<UTC time>.log
#   bash benchmarks/scaling_device.sh --log PATH      # another log file (never overwritten: refused if it exists)
#   bash benchmarks/scaling_device.sh --tiny --log P  # a CPU-only dry run in seconds (tests/training/test_scaling_script.py)
#
# The log starts with the machine (CPUs, GPU, /dev/shm, torch, commit) and gets every row as it is
# measured, so a run cut short keeps the rows already done. Exit status: 0, or that of the failing step.
set -euo pipefail

usage() {
    echo "scaling_device.sh: error: $1 (usage: scaling_device.sh [--tiny] [--log PATH])" >&2
    exit 2
}

tiny=0
log=""
while [ $# -gt 0 ]; do
    case "$1" in
        --tiny) tiny=1 ;;
        --log) [ $# -ge 2 ] || usage "--log needs a path"; log="$2"; shift ;;
        *) usage "unknown argument '$1'" ;;
    esac
    shift
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -n "$log" ] || log="$root/docs/measurements/bench_train_scaling_$(date -u +%Y%m%dT%H%M%SZ).log"
[ -e "$log" ] && usage "$log already exists; it is not overwritten"
[ -d "$(dirname "$log")" ] || usage "no folder for the log: $(dirname "$log")"
python="${PYTHON:-python}"

if [ "$tiny" = 1 ]; then  # a dry run on the CPU: the same steps, tiny sizes
    sizes=(--num-envs 16 --num-steps 4 --num-minibatches 2 --updates 1 --league default)
    update_sizes=(--num-envs 16 --num-steps 4 --num-minibatches 2 --updates 1)
    gpu=cpu
    gpu_workers=(1 2)
    many=2
else
    sizes=(--num-envs 8192 --num-steps 32 --updates 2)
    update_sizes=(--updates 5)
    gpu=cuda
    gpu_workers=(1 2 4 8 16)
    many=16
    "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
        || usage "no CUDA device here (--tiny runs the steps on the CPU)"
fi

bench() {  # one benchmarks/ script run (name, arguments), its lines appended to the log as they come
    local script="$1"
    shift
    echo "\$ python benchmarks/$script $*" >> "$log"
    PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$python" "$root/benchmarks/$script" "$@" | tee -a "$log"
}

{
    echo "# bench_train scaling run, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown), tiny=$tiny"
    echo "# CPUs: $(nproc), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
    echo "# /dev/shm: $(df -h /dev/shm 2>/dev/null | tail -1)"
    if command -v nvidia-smi > /dev/null; then
        echo "# GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
    else
        echo "# GPU: none (no nvidia-smi)"
    fi
} > "$log"
shm_kb=$(df -k --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ' || echo 0)
if [ "$tiny" = 0 ] && [ "${shm_kb:-0}" -lt 4000000 ]; then  # the rollout buffers of 8,192 games live there
    echo "# warning: /dev/shm has under 4 GB free; the multi-worker rows may fail (docker: --shm-size=8g)" \
        | tee -a "$log" >&2
fi
echo "scaling_device.sh: logging to $log"
start=$SECONDS
bench bench_train.py "${sizes[@]}" --device cpu --workers 1 "$many"
bench bench_train.py "${sizes[@]}" --device "$gpu" --workers "${gpu_workers[@]}"
bench bench_train.py "${sizes[@]}" --device "$gpu" --workers "$many" --overlap on
bench bench_update.py "${update_sizes[@]}" --device "$gpu"
echo "# done in $((SECONDS - start)) s" | tee -a "$log"
