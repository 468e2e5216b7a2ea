#!/usr/bin/env bash
# The equal-budget learning check (`make parity`): this project's `cone` and QE-ConE,
# ConE's reference code, trained with the same configuration on the same train queries;
# the project's 300-step loss curves (3 seeds) against QE-ConE's run-to-run spread
# (3 seeds), window by window (scripts/reference/paritycheck).
#
# Configuration (issue 11): d 64, b 128, n 32, γ 2, λ 1, lr 3e-4, dropout 0.1, 300 steps,
# on 11,000 FB15k-237 train queries (2,000 of each path and EPFO type, 200 of each negation
# type, sample seed 0). HIDDEN is the projection MLP's width on both sides: by default 1600,
# ConE's own (QE-ConE hard-codes it; the project's three runs take about 1.7 minutes on 2
# AVX-512 cores, about 6.5 on 2 AVX2 cores beside another job), or
# 128 (HIDDEN=128 make parity, about 1.5 minutes). Each width has its committed QE-ConE
# curves: testdata/reference/curves-1600.json (1600), curves.json (128).
#
# With PyTorch and QE-ConE's source at hand (QECONE=path of a checkout of
# github.com/MIRALab-USTC/QE-ConE, MIT; REFERENCE= is read too) and RERUN_REFERENCE=1,
# QE-ConE's curves are made again first,
# one thread. Debian's python3-torch takes its BLAS from the libblas.so.3 alternative: with
# only the reference BLAS (libblas3) a step at width 1600 takes about 2.6 s on one core;
# with OpenBLAS (apt-get install libopenblas0-pthread, which takes over the alternative)
# about 0.4 s, so the three seeds take about 6 minutes (128: about 3 minutes).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out/parity}
PY=${PY:-/usr/bin/python3}
REFERENCE=${REFERENCE:-${QECONE:-}}
HIDDEN=${HIDDEN:-1600}
case "$HIDDEN" in
128) CURVES=testdata/reference/curves.json ;;
*) CURVES=testdata/reference/curves-$HIDDEN.json ;;
esac
if [ ! -s "$CURVES" ] && [ "${RERUN_REFERENCE:-0}" != 1 ]; then
	echo "parity: no QE-ConE curves for width $HIDDEN ($CURVES); make them with RERUN_REFERENCE=1" >&2
	exit 1
fi
mkdir -p "$OUT"
CONFIG=(--dim 64 --batch 128 --negatives 32 --gamma 2 --lambda 1 --lr 3e-4 --dropout 0.1 --cone-hidden "$HIDDEN" --steps 300)

if [ ! -s "$OUT/train-queries.arrow" ]; then
	bin/sample generate --data data/fb15k-237 --split train --seed 0 -q \
		--count 1p=2000,2p=2000,3p=2000,2i=2000,3i=2000,2in=200,3in=200,inp=200,pin=200,pni=200 \
		-o "$OUT/train-queries.arrow"
fi
if [ "${RERUN_REFERENCE:-0}" = 1 ]; then
	if "$PY" -c 'import torch' 2>/dev/null && [ -f "$REFERENCE/models.py" ]; then
		go run ./scripts/reference/exportqueries "$OUT/train-queries.arrow" "$OUT/train-queries.json"
		# One thread for torch and for OpenBLAS's own pool (torch does not size it).
		OPENBLAS_NUM_THREADS=1 "$PY" scripts/reference/make_fixtures.py curves --reference "$REFERENCE" \
			--queries "$OUT/train-queries.json" --out "$CURVES" --seeds 0,1,2 --steps 300 \
			--hidden "$HIDDEN" --threads 1
	else
		echo "parity: no PyTorch ($PY) or no QE-ConE at '$REFERENCE' (set QECONE to a checkout): using the committed $CURVES" >&2
		[ -s "$CURVES" ] || exit 1
	fi
fi
logs=()
for s in 0 1 2; do
	bin/train --train "$OUT/train-queries.arrow" --checkpoint "$OUT/cone-w$HIDDEN-seed$s.arrow" \
		--log "$OUT/cone-w$HIDDEN-seed$s-log.arrow" --model cone "${CONFIG[@]}" --eval-every 0 \
		--seed "$s" --workers 1 -q --overwrite
	logs+=("$OUT/cone-w$HIDDEN-seed$s-log.arrow")
done
go run ./scripts/reference/paritycheck --reference "$CURVES" "${logs[@]}"
