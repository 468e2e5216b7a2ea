#!/usr/bin/env bash
# Stage-level benchmarks on the CPU (make bench): training steps per second at the paper
# configuration (d=800, b=512, n=128) and at d=200, for rocone and cone, with train's own
# split of the time (distance, intersection/projection, optimiser); peak memory at NELL-995's
# paper configuration; and rank throughput against all FB15k-237 entities at d=800.
# Needs the binaries (make build) and out/bench/train-queries.arrow (make bench makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/bench
mkdir -p "$out"
steps=${BENCH_STEPS:-4}
measure() { go run ./scripts/measure -label "$1" -- "${@:2}"; }

# d b n: the paper configuration, d=200, and the small configuration PyTorch was timed at.
for model in rocone cone; do
	for config in "800 512 128" "200 512 128" "64 128 32"; do
		read -r dim batch neg <<<"$config"
		echo "== train $model d=$dim b=$batch n=$neg, $steps steps (one step = three updates)"
		measure "train $model d=$dim b=$batch n=$neg" bin/train --train "$out/train-queries.arrow" --model "$model" --dim "$dim" \
			--batch "$batch" --negatives "$neg" --steps "$steps" --eval-every 0 --checkpoint "$out/$model-$dim.arrow" --log "" 2>&1 |
			grep -E 'steps/s|^  |measure|done'
	done
done

if [ ! -f "$out/nell-train-queries.arrow" ]; then
	bin/sample generate --data data/nell-995 --split train -q -o "$out/nell-train-queries.arrow"
fi
echo "== train rocone on NELL-995 at the paper config (preset nell995), $steps steps: peak memory"
measure "train nell995 preset" bin/train --train "$out/nell-train-queries.arrow" --preset nell995 --steps "$steps" \
	--eval-every 0 --checkpoint "$out/nell.arrow" --log "" 2>&1 | grep -E 'steps/s|measure|done'

echo "== rank: 2,300 test queries against all 14,505 FB15k-237 entities at d=800"
bin/sample generate --data data/fb15k-237 --split test -q --types 1p,2p,2i,2in,up \
	--count 1p=1500,2p=200,2i=200,2in=200,up=200 -o "$out/rank-queries.arrow"
measure "rank d=800" bin/rank --checkpoint "$out/rocone-800.arrow" --queries "$out/rank-queries.arrow" -o "$out/ranks.arrow" 2>&1 | grep -E 'queries in|measure'
go run ./scripts/bandwidth -table-bytes $((14505 * 800 * 4))
