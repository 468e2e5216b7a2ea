#!/usr/bin/env bash
# One full training run at a paper configuration, recorded as a results entry (results/README.md),
# in as many commands as it takes. Each call trains for at most BUDGET seconds (default 540,
# inside a lent GPU's 10-minute command), checkpointing when the time is up (train
# checkpoints on SIGTERM; resume is bit-identical, so the pieces give the run that one
# uninterrupted command would). The call in which training finishes ranks the test queries,
# writes the entry and prints the table row; calls after that do nothing.
#
# Usage: scripts/paper-run.sh DATASET MODEL SEED WORK ENTRY
#   DATASET  fb15k-237 or nell-995 (the preset of that name; data/DATASET)
#   MODEL    rocone, cone or an ablation (train --model)
#   WORK     a folder for the queries, checkpoint and logs (kept between calls)
#   ENTRY    the results entry to write, e.g. results/fb15k-237/rocone/seed0-h100
# Environment: BIN (default bin; bin/device-step for the carried cuda binaries), DEVICE
# (default cuda), BUDGET (seconds of training per call, default 540), STEPS (default 300001, the
# presets' max_steps; fewer for a trial, which the table then shows as another configuration),
# EXTRA (more train flags), SAMPLE (more `sample generate` flags, e.g. --count for a trial
# on fewer queries; the table then shows another configuration too). WORK and ENTRY are
# taken from the caller's folder, BIN and the data from the repository's.
set -uo pipefail
export LC_NUMERIC=C # EPOCHREALTIME and awk's numbers with a decimal point
[ $# -eq 5 ] || { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; } # WORK and ENTRY: from the caller's folder
ds=$1 model=$2 seed=$3 work=$(abs "$4") entry=$(abs "$5")
cd "$(dirname "$0")/.." || exit 2
bin=${BIN:-bin} device=${DEVICE:-cuda} budget=${BUDGET:-540} steps=${STEPS:-300001}
case "$ds" in
fb15k-237) preset=fb15k-237 ;;
nell-995) preset=nell995 ;;
*) echo "paper-run: dataset $ds: want fb15k-237 or nell-995" >&2; exit 2 ;;
esac
[ -e "$entry/run.json" ] && { echo "paper-run: $entry is complete"; exit 0; }
# The entry is moved into place whole at the end; a folder already there would receive it
# inside itself instead.
[ -e "$entry" ] && { echo "paper-run: $entry exists but holds no run.json: not an entry this run may write; remove it or choose another ENTRY" >&2; exit 2; }
# The commit goes into the entry; without one the entry could not say how it was made, and
# metrics results would refuse it after the run: say so before any training.
commit=$(cat "$bin/COMMIT" 2>/dev/null || scripts/commit-id 2>/dev/null) ||
	{ echo "paper-run: no $bin/COMMIT and not in a git tree: the commit the binaries were built from is unknown" >&2; exit 2; }
grep -Eqx '[0-9a-f]{7,40}(-dirty)?' <<<"$commit" ||
	{ echo "paper-run: commit \"$commit\" (from $bin/COMMIT or scripts/commit-id) is not a commit id" >&2; exit 2; }
mkdir -p "$work" || exit 1
log() { echo "$*" >>"$work/commands.txt"; echo "+ $*" >&2; "$@"; }

for split in train test; do
	if [ ! -s "$work/$split.arrow" ]; then
		# shellcheck disable=SC2086 # SAMPLE is a list of flags, split into words on purpose
		log "$bin/sample" generate --data "data/$ds" --split "$split" ${SAMPLE:-} -q -o "$work/$split.arrow" || exit 1
	fi
done
resume=()
[ -s "$work/model.arrow" ] && resume=(--resume)
start=$EPOCHREALTIME
# shellcheck disable=SC2086 # EXTRA is a list of flags, split into words on purpose
log timeout -s TERM "$budget" "$bin/train" --train "$work/train.arrow" --checkpoint "$work/model.arrow" \
	--log "$work/train-log.arrow" --preset "$preset" --model "$model" --seed "$seed" --steps "$steps" --eval-every 0 \
	--checkpoint-every 10000 --device "$device" "${resume[@]}" ${EXTRA:-}
status=$?
awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f\n", b - a }' >>"$work/train-seconds.txt"
# The device of each call: a run may be trained in pieces on more than one machine
# (scripts/cuda/relay.sh carries it between lent sessions).
if [ "$device" = cpu ]; then gpu="CPU ($(nproc) cores)"; else gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); fi
echo "${gpu:-unknown}" >>"$work/devices.txt"
case $status in
0) ;;
124) echo "paper-run: the budget of ${budget}s is spent; the checkpoint is saved: call again to continue" >&2; exit 0 ;;
*) echo "paper-run: train failed (exit $status)" >&2; exit 1 ;;
esac

log "$bin/rank" --checkpoint "$work/model.arrow" --queries "$work/test.arrow" --device "$device" -o "$work/ranks.arrow" || exit 1
tmp="$entry.tmp"
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
log "$bin/metrics" -o "$tmp/metrics.arrow" "$work/ranks.arrow" || exit 1
cp "$work/train-log.arrow" "$tmp/train-log.arrow" || exit 1
json() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
gpus=$(awk '!seen[$0]++ { printf "%s%s", sep, $0; sep = " + " }' "$work/devices.txt")
wall=$(awk '{s+=$1} END {printf "%.3f", s}' "$work/train-seconds.txt")
{
	printf '{\n  "dataset": %s,\n  "model": %s,\n  "seed": %s,\n  "steps": %s,\n' "$(json "$ds")" "$(json "$model")" "$seed" "$steps"
	printf '  "commit": %s,\n  "device": %s,\n  "date": %s,\n  "wall_time_s": %s,\n  "commands": [\n' \
		"$(json "$commit")" "$(json "${gpus:-unknown}")" "$(json "$(date -u +%F)")" "$wall"
	sep=""
	while IFS= read -r c; do printf '%s    %s' "$sep" "$(json "$c")"; sep=$',\n'; done <"$work/commands.txt"
	printf '\n  ]\n}\n'
} >"$tmp/run.json"
mkdir -p "$(dirname "$entry")" && mv "$tmp" "$entry" || exit 1
echo "paper-run: wrote $entry"
"$bin/metrics" results "$entry"
