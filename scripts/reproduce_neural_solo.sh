#!/usr/bin/env bash
# Rebuild neural-solo (agents/pretrained/escoba_2p_solo.pt) from nothing: labels, endgame network,
# midgame network. One command, about 3 CPU-hours at full size on one core:
#
#     bash scripts/reproduce_neural_solo.sh [OUT]     # default OUT: runs/neural_solo
#
# Writes OUT/escoba_2p_solo.pt and every intermediate file under OUT; never touches anything else.
# Each file appears whole or not at all, so a run that stopped (a signal, a full disk) continues
# where it was when started again with the same OUT: a step whose file exists is skipped.
# The sizes can be scaled down through the environment (the test suite runs it tiny):
#   MID_CHUNK (30000 labels per midgame chunk), MID_SIMS (500), EG_BIG (150000), EG_FIRST (200000),
#   EG_SMALL (40000), TEST_LABELS (20000), EPOCHS (20), PROBE_EPOCHS (8), HIDDEN ("256 256").
# A second DAgger round (ROUND2, default "": none) then labels the positions of the step-4 agent and
# fits a fresh midgame network on them alone, written as OUT/escoba_2p_solo_r2.pt:
#   ROUND2="KxN": K label files of N decisions (seeds 9201..; held out: ROUND2_TEST, 10000, seed 9199),
#   ROUND2_INPUTS ("answers"; "plain": the first network's inputs), ROUND2_HIDDEN ("512 512 512"),
#   ROUND2_EPOCHS (6), ROUND2_LR (3e-4); the fit keeps its inputs in float16. ROUND2=48x30000 rebuilds
#   the model card's second-round network (about 2 CPU-hours of labels and 20 minutes of fitting more);
#   it is not shipped: it beats neural-solo by about 0.03 a round but still loses to hybrid.
# PYTHON names the interpreter of every step (default: python3 on PATH); point it at the project's
# venv when that venv is not activated, e.g. PYTHON=.venv/bin/python bash scripts/reproduce_neural_solo.sh
set -euo pipefail
PYTHON=${PYTHON:-python3}
OUT=${1:-runs/neural_solo}
MID_CHUNK=${MID_CHUNK:-30000}
MID_SIMS=${MID_SIMS:-500}
EG_BIG=${EG_BIG:-150000}
EG_FIRST=${EG_FIRST:-200000}
EG_SMALL=${EG_SMALL:-40000}
TEST_LABELS=${TEST_LABELS:-20000}
EPOCHS=${EPOCHS:-20}
PROBE_EPOCHS=${PROBE_EPOCHS:-8}
HIDDEN=${HIDDEN:-256 256}
ROUND2=${ROUND2:-}
ROUND2_TEST=${ROUND2_TEST:-10000}
ROUND2_INPUTS=${ROUND2_INPUTS:-answers}
ROUND2_HIDDEN=${ROUND2_HIDDEN:-512 512 512}
ROUND2_EPOCHS=${ROUND2_EPOCHS:-6}
ROUND2_LR=${ROUND2_LR:-3e-4}
if [ -n "$ROUND2" ] && ! [[ "$ROUND2" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]]; then
    echo "reproduce_neural_solo.sh: ROUND2 must be KxN (K label files of N decisions), not '$ROUND2'" >&2; exit 2
fi
case "$ROUND2_INPUTS" in
    plain) ROUND2_SET=() ;;
    answers) ROUND2_SET=(--answers) ;;
    *) echo "reproduce_neural_solo.sh: ROUND2_INPUTS must be plain or answers, not '$ROUND2_INPUTS'" >&2
       exit 2 ;;
esac
PLAIN=agents/pretrained/escoba_2p_plain.pt
mkdir -p "$OUT"
L="$OUT/labels"
mkdir -p "$L"
# distill OUT ARGS...: label decisions into OUT unless it exists; train OUT ARGS...: the same for a network
distill() { local out=$1; shift; [ -e "$out" ] || "$PYTHON" -m agents.training.distill --no-progress --values --out "$out" "$@"; }
train() { local out=$1; shift; [ -e "$out" ] || "$PYTHON" -m agents.training.solo_fit "$@" --out "$out"; }
MIX=(--behaviour "checkpoint:$PLAIN" expert greedy --weights 0.5 0.35 0.15)

# 1. The endgame network: exact solver values of 2-player endgame decisions (1,295,159 labels at full size).
distill "$L/endgame_first.npz" --labels "$EG_FIRST" --teacher endgame --seed 41 "${MIX[@]}"
for s in 61 62 63 64 65 66 67; do
    distill "$L/eg_big_$s.npz" --labels "$EG_BIG" --teacher endgame --seed $s \
        --behaviour expert greedy --weights 0.65 0.35
done
distill "$L/eg_40k.npz" --labels "$EG_SMALL" --teacher endgame --seed 77 \
    --behaviour expert greedy --weights 0.7 0.3
distill "$L/eg_small.npz" --labels $((EG_SMALL / 8)) --teacher endgame --seed 99 --behaviour expert greedy
distill "$L/eg_test.npz" --labels $((EG_SMALL / 4)) --teacher endgame --seed 78 "${MIX[@]}"
train "$OUT/endgame.pt" "$L/endgame_first.npz" "$L"/eg_big_6?.npz "$L/eg_40k.npz" "$L/eg_small.npz" \
    --test "$L/eg_test.npz" --epochs "$EPOCHS" --batch 128 --hidden $HIDDEN

# 2. Midgame labels: search:sims=500's rollout values of every action, positions of the plain
#    network, expert and greedy (30% of the moves played are the search's).
for s in 1000 1001 1002 1003 1004 1005 1006 1007 1008 1009 1010 1011 1012 2000 2001; do
    distill "$L/mid_$s.npz" --labels "$MID_CHUNK" --teacher "search:sims=$MID_SIMS" --seed $s "${MIX[@]}"
done
distill "$L/mid_test.npz" --labels "$TEST_LABELS" --teacher "search:sims=$MID_SIMS" --seed 9000 "${MIX[@]}"

# 3. A first midgame network on two chunks, then positions that agent reaches (DAgger-style).
train "$OUT/probe.pt" "$L/mid_1000.npz" "$L/mid_2000.npz" --phase midgame --solo "$OUT/endgame.pt" \
    --epochs "$PROBE_EPOCHS" --loss adv --hidden $HIDDEN
for s in 3000 3001 3002 3003 3004 3005 3006 3007 3008; do
    distill "$L/mid_dag_$s.npz" --labels "$MID_CHUNK" --teacher "search:sims=$MID_SIMS" --seed $s \
        --behaviour "checkpoint:$OUT/probe.pt" expert greedy --weights 0.6 0.3 0.1
done

# 4. The midgame network on every midgame chunk, scored on the held-out chunk after each epoch.
train "$OUT/escoba_2p_solo.pt" "$L"/mid_[0-9]*.npz "$L"/mid_dag_*.npz --phase midgame \
    --solo "$OUT/endgame.pt" --test "$L/mid_test.npz" --epochs "$EPOCHS" --batch 128 --loss adv --hidden $HIDDEN
echo "wrote $OUT/escoba_2p_solo.pt"

# 5. (ROUND2 set) Positions of the step-4 agent (60% of the seats' moves; expert 25%, greedy 15%),
#    search:sims=$MID_SIMS values, and a fresh midgame network fitted on those labels alone.
if [ -n "$ROUND2" ]; then
    [[ "$ROUND2" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]]
    ROUND2_FILES=${BASH_REMATCH[1]} ROUND2_LABELS=${BASH_REMATCH[2]}
    ROUND2_MIX=(--teacher "search:sims=$MID_SIMS" --behaviour "checkpoint:$OUT/escoba_2p_solo.pt" expert greedy
                --weights 0.6 0.25 0.15)
    distill "$L/mid2_test.npz" --labels "$ROUND2_TEST" --seed 9199 "${ROUND2_MIX[@]}"
    round2=()
    for ((i = 1; i <= ROUND2_FILES; i++)); do
        distill "$L/mid2_$i.npz" --labels "$ROUND2_LABELS" --seed $((9200 + i)) "${ROUND2_MIX[@]}"
        round2+=("$L/mid2_$i.npz")
    done
    train "$OUT/escoba_2p_solo_r2.pt" "${round2[@]}" --phase midgame --solo "$OUT/escoba_2p_solo.pt" \
        "${ROUND2_SET[@]}" --float16 --hidden $ROUND2_HIDDEN --epochs "$ROUND2_EPOCHS" --lr "$ROUND2_LR" \
        --test "$L/mid2_test.npz" --batch 128 --loss adv
    echo "wrote $OUT/escoba_2p_solo_r2.pt"
fi
