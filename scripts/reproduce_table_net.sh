#!/usr/bin/env bash
# Rebuild a move network of the 3-player or 2v2 table (agents.nets.tablenet) from nothing: search-labelled
# decisions, then the network fitted to the search's per-move values. One command:
#
#     bash scripts/reproduce_table_net.sh TABLE [OUT]     # TABLE: 3p or 2v2; default OUT: runs/table_net_TABLE
#
# Writes OUT/move_TABLE.pt and every intermediate file under OUT; never touches anything else.
# Each file appears whole or not at all, so a run that stopped (a signal, a full disk) continues
# where it was when started again with the same OUT: a step whose file exists is skipped.
# The sizes can be scaled down through the environment (the test suite runs it tiny):
#   CHUNKS ("1 2 3": one label file per number, its seed 3000 + number at 3p, 4000 + number at 2v2),
#   CHUNK (labels per file: 100000 at 3p, 50000 at 2v2), SIMS (400 at 3p, 1000 at 2v2),
#   TEST_LABELS (5000, seed 3900 / 4900), EPOCHS (12), HIDDEN ("256 256").
#   LAST (default "": none): the label count of each last-deal file (seeds 3201.. / 4201..), decisions
#   once the stock is empty labelled by the same search while the move network (symmetric) and the
#   baselines play; with LAST set the script then fits a last-deal network to them (LAST_EPOCHS, 6)
#   and writes OUT/move_TABLE_last.pt: the move network plus it. The model card's 220k row at 2v2 is
#   LAST="60000 60000 100000" (about 30 CPU-minutes of labels, 4 of fitting); it plays no better
#   than the move network alone, so it is not part of the shipped recipe.
#   DAGGER (default "": none): the label count of one DAgger file (seed 3111 / 4111): decisions
#   labelled by the same search while the move network (symmetric) and the baselines play, then the
#   move network fine-tuned on them (3 epochs, learning rate 1e-4, symmetric play) into
#   OUT/move_TABLE_dag.pt, held out DAG_TEST_LABELS (4000, seed 3912 / 4912, 32 games at once).
#   With LAST set too, the last-deal network is fitted after that network (its --base and --init),
#   the last-deal labels still played by the plain move network.
#   LAST_INPUTS (default "table"): "answers" gives the last-deal network the larger input set
#   (solo_fit --answers: what each unseen card would take on the table a move leaves), fitted fresh
#   with LAST_HIDDEN (default "512 512 512") instead of from the move network.
#   In LAST, "KxN" stands for K files of N labels ("12x100000": twelve of 100k). LAST_FLOAT16=1 keeps
#   the fit's inputs in float16 (solo_fit --float16), which a fit on millions of labels needs.
#   The shipped neural-2v2-move is
#     DAGGER=50000 LAST="60000 60000 100000 100000" LAST_INPUTS=answers LAST_EPOCHS=8
#   (about 3 CPU-hours of labels, the move network's included; 7 minutes of last-deal fitting).
# At full size: about 1 CPU-hour of labels at 3p and 1.3 at 2v2 (sims=1000), a minute of fitting.
# PYTHON names the interpreter of every step (default: python3 on PATH).
set -euo pipefail
PYTHON=${PYTHON:-python3}
TABLE=${1:?usage: reproduce_table_net.sh 3p|2v2 [OUT]}
case "$TABLE" in
    3p) RULES=(--players 3); BASE=3000; BEHAVIOUR=neural-3p; DEFAULT_SIMS=400; DEFAULT_CHUNK=100000 ;;
    2v2) RULES=(--players 4 --partnerships); BASE=4000; BEHAVIOUR=neural-2v2; DEFAULT_SIMS=1000; DEFAULT_CHUNK=50000 ;;
    *) echo "reproduce_table_net.sh: TABLE must be 3p or 2v2, not '$TABLE'" >&2; exit 2 ;;
esac
OUT=${2:-runs/table_net_$TABLE}
CHUNKS=${CHUNKS:-1 2 3}
CHUNK=${CHUNK:-$DEFAULT_CHUNK}
SIMS=${SIMS:-$DEFAULT_SIMS}
TEST_LABELS=${TEST_LABELS:-5000}
EPOCHS=${EPOCHS:-12}
HIDDEN=${HIDDEN:-256 256}
LAST=${LAST:-}
LAST_EPOCHS=${LAST_EPOCHS:-6}
LAST_INPUTS=${LAST_INPUTS:-table}
LAST_HIDDEN=${LAST_HIDDEN:-512 512 512}
DAGGER=${DAGGER:-}
DAG_TEST_LABELS=${DAG_TEST_LABELS:-4000}
case "$LAST_INPUTS" in
    table|answers) ;;
    *) echo "reproduce_table_net.sh: LAST_INPUTS must be table or answers, not '$LAST_INPUTS'" >&2; exit 2 ;;
esac
case "${LAST_FLOAT16:-0}" in
    0) LAST_HALF=() ;;
    1) LAST_HALF=(--float16) ;;
    *) echo "reproduce_table_net.sh: LAST_FLOAT16 must be 0 or 1, not '$LAST_FLOAT16'" >&2; exit 2 ;;
esac
L="$OUT/labels"
mkdir -p "$L"
distill() { local out=$1; shift; [ -e "$out" ] || "$PYTHON" -m agents.training.distill --no-progress --values --out "$out" "$@"; }
MIX=(--teacher "search:sims=$SIMS" --behaviour "$BEHAVIOUR" expert greedy --weights 0.5 0.35 0.15 "${RULES[@]}")

files=()
for c in $CHUNKS; do
    distill "$L/mid_$c.npz" --labels "$CHUNK" --seed $((BASE + c)) "${MIX[@]}"
    files+=("$L/mid_$c.npz")
done
distill "$L/test.npz" --labels "$TEST_LABELS" --seed $((BASE + 900)) "${MIX[@]}"
[ -e "$OUT/move_$TABLE.pt" ] || "$PYTHON" -m agents.training.solo_fit "${files[@]}" --phase table \
    --test "$L/test.npz" --loss adv --epochs "$EPOCHS" --hidden $HIDDEN --out "$OUT/move_$TABLE.pt"
echo "wrote $OUT/move_$TABLE.pt"
MOVE="$OUT/move_$TABLE.pt"
# DAgger and last-deal labels: the search labels decisions while the move network (symmetric) plays
SELF_MIX=(--teacher "search:sims=$SIMS" --behaviour "checkpoint:$OUT/move_$TABLE.pt,symmetric=true" expert
          greedy --weights 0.6 0.25 0.15 "${RULES[@]}")
if [ -n "$DAGGER" ]; then
    distill "$L/dag_1.npz" --labels "$DAGGER" --seed $((BASE + 111)) "${SELF_MIX[@]}"
    distill "$L/dag_test.npz" --labels "$DAG_TEST_LABELS" --games 32 --seed $((BASE + 912)) "${SELF_MIX[@]}"
    [ -e "$OUT/move_${TABLE}_dag.pt" ] || "$PYTHON" -m agents.training.solo_fit "$L/dag_1.npz" --phase table \
        --init "$MOVE" --symmetric --test "$L/dag_test.npz" --loss adv --epochs 3 --batch 128 --lr 1e-4 \
        --out "$OUT/move_${TABLE}_dag.pt"
    MOVE="$OUT/move_${TABLE}_dag.pt"
    echo "wrote $MOVE"
fi
[ -n "$LAST" ] || exit 0
case "$LAST_INPUTS" in
    table) LAST_NET=(--init "$MOVE") ;;
    answers) LAST_NET=(--answers --hidden $LAST_HIDDEN) ;;
esac
LAST_NET+=("${LAST_HALF[@]}")
sizes=()
for n in $LAST; do
    if [[ "$n" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]]; then
        for _ in $(seq "${BASH_REMATCH[1]}"); do sizes+=("${BASH_REMATCH[2]}"); done
    else
        sizes+=("$n")
    fi
done
LAST_MIX=(--last-deal "${SELF_MIX[@]}")
last=()
i=0
for n in "${sizes[@]}"; do
    i=$((i + 1))
    distill "$L/last_$i.npz" --labels "$n" --seed $((BASE + 200 + i)) "${LAST_MIX[@]}"
    last+=("$L/last_$i.npz")
done
distill "$L/last_test.npz" --labels "$TEST_LABELS" --seed $((BASE + 291)) "${LAST_MIX[@]}"
[ -e "$OUT/move_${TABLE}_last.pt" ] || "$PYTHON" -m agents.training.solo_fit "${last[@]}" --phase last \
    --base "$MOVE" "${LAST_NET[@]}" --symmetric --test "$L/last_test.npz" \
    --loss adv --epochs "$LAST_EPOCHS" --batch 128 --lr 3e-4 --out "$OUT/move_${TABLE}_last.pt"
echo "wrote $OUT/move_${TABLE}_last.pt"
