#!/usr/bin/env bash
# Rebuild neural-solo (agents/pretrained/escoba_2p_solo.pt) from nothing: labels, endgame network,
# midgame network. One command, about 3 CPU-hours at full size on one core:
#
#     bash scripts/reproduce_neural_solo.sh [OUT]     # default OUT: runs/neural_solo (must not exist)
#
# Writes OUT/escoba_2p_solo.pt and every intermediate file under OUT; never touches anything else.
# The sizes can be scaled down through the environment (the test suite runs it tiny):
#   MID_CHUNK (30000 labels per midgame chunk), MID_SIMS (500), EG_BIG (150000), EG_FIRST (200000),
#   EG_SMALL (40000), TEST_LABELS (20000), EPOCHS (20), PROBE_EPOCHS (8), HIDDEN ("256 256").
set -euo pipefail
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
PLAIN=agents/pretrained/escoba_2p_plain.pt
if [ -e "$OUT" ]; then
    echo "reproduce_neural_solo.sh: error: $OUT already exists; choose another folder" >&2
    exit 2
fi
mkdir -p "$OUT"
L="$OUT/labels"
mkdir -p "$L"
distill() { python -m agents.distill --no-progress --values "$@"; }
MIX=(--behaviour "checkpoint:$PLAIN" expert greedy --weights 0.5 0.35 0.15)

# 1. The endgame network: exact solver values of 2-player endgame decisions (1,295,159 labels at full size).
distill --out "$L/endgame_first.npz" --labels "$EG_FIRST" --teacher endgame --seed 41 "${MIX[@]}"
for s in 61 62 63 64 65 66 67; do
    distill --out "$L/eg_big_$s.npz" --labels "$EG_BIG" --teacher endgame --seed $s \
        --behaviour expert greedy --weights 0.65 0.35
done
distill --out "$L/eg_40k.npz" --labels "$EG_SMALL" --teacher endgame --seed 77 \
    --behaviour expert greedy --weights 0.7 0.3
distill --out "$L/eg_small.npz" --labels $((EG_SMALL / 8)) --teacher endgame --seed 99 --behaviour expert greedy
distill --out "$L/eg_test.npz" --labels $((EG_SMALL / 4)) --teacher endgame --seed 78 "${MIX[@]}"
python scripts/train_solo.py "$L/endgame_first.npz" "$L"/eg_big_6?.npz "$L/eg_40k.npz" "$L/eg_small.npz" \
    --test "$L/eg_test.npz" --epochs "$EPOCHS" --batch 128 --hidden $HIDDEN --out "$OUT/endgame.pt"

# 2. Midgame labels: search:sims=500's rollout values of every action, positions of the plain
#    network, expert and greedy (30% of the moves played are the search's).
for s in 1000 1001 1002 1003 1004 1005 1006 1007 1008 1009 1010 1011 1012 2000 2001; do
    distill --out "$L/mid_$s.npz" --labels "$MID_CHUNK" --teacher "search:sims=$MID_SIMS" --seed $s "${MIX[@]}"
done
distill --out "$L/mid_test.npz" --labels "$TEST_LABELS" --teacher "search:sims=$MID_SIMS" --seed 9000 "${MIX[@]}"

# 3. A first midgame network on two chunks, then positions that agent reaches (DAgger-style).
python scripts/train_solo.py "$L/mid_1000.npz" "$L/mid_2000.npz" --phase midgame --solo "$OUT/endgame.pt" \
    --epochs "$PROBE_EPOCHS" --loss adv --hidden $HIDDEN --out "$OUT/probe.pt"
for s in 3000 3001 3002 3003 3004 3005 3006 3007 3008; do
    distill --out "$L/mid_dag_$s.npz" --labels "$MID_CHUNK" --teacher "search:sims=$MID_SIMS" --seed $s \
        --behaviour "checkpoint:$OUT/probe.pt" expert greedy --weights 0.6 0.3 0.1
done

# 4. The midgame network on every midgame chunk, scored on the held-out chunk after each epoch.
python scripts/train_solo.py "$L"/mid_[0-9]*.npz "$L"/mid_dag_*.npz --phase midgame --solo "$OUT/endgame.pt" \
    --test "$L/mid_test.npz" --epochs "$EPOCHS" --batch 128 --loss adv --hidden $HIDDEN \
    --out "$OUT/escoba_2p_solo.pt"
echo "wrote $OUT/escoba_2p_solo.pt"
