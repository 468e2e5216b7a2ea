#!/usr/bin/env bash
# The stages through pipes: queries stream from sample into embed, cones from embed into
# rank, ranks from rank into metrics; only the model and a copy of the test queries (which
# rank needs for the answers) touch the disk.
#
#   pipelines/pipe.sh                      # on the shipped FB15k-237, a small quick model
#   BIN=bin DATA=testdata/tiny OUT=/tmp/p pipelines/pipe.sh
set -euo pipefail
BIN=${BIN:-bin}
DATA=${DATA:-data/fb15k-237}
OUT=${OUT:-out/pipe}
mkdir -p "$OUT"

"$BIN"/sample generate --data "$DATA" --split train -q --count 2p=2000,3p=2000,2i=2000,3i=2000,2in=500,3in=500,inp=500,pin=500,pni=500 \
	-o "$OUT/train-queries.arrow"
"$BIN"/train --train "$OUT/train-queries.arrow" --dim 32 --batch 128 --negatives 32 --lr 0.005 --steps 30 -q \
	--checkpoint "$OUT/model.arrow" --log ""

"$BIN"/sample generate --data "$DATA" --split test -q --types 1p,2p,2i,2in --count 1p=300,2p=100,2i=100,2in=100 -o - |
	tee "$OUT/test-queries.arrow" |
	"$BIN"/embed --checkpoint "$OUT/model.arrow" --queries - -q -o - |
	"$BIN"/rank --checkpoint "$OUT/model.arrow" --queries "$OUT/test-queries.arrow" --cones - -q -o - |
	"$BIN"/metrics --resamples 200 -
