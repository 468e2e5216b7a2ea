#!/usr/bin/env bash
# make bench-scale: how each stage's cost grows with the graph. For synthetic KGs
# (sample synth: power-law degrees, 20 facts per entity listed in both directions, so
# about 40 edge rows per entity as in FB15k-237, 237 relations) of 15k, 150k and 1.5M
# entities, and for FB15k-237 itself (data/fb15k-237, 14,505 entities: the reference of
# issue 13's "sparse Adam's update within 2× of its time on FB15k-237"), it measures per
# stage the time per unit of work and the peak memory:
#
#   synth    wall time and peak RSS of writing the graph (cached in out/bench-scale/N/kg)
#   sample   train queries (9 types) sampled per second, counting the sampling of each
#            type but 1p (sample's per-type seconds; 1p enumerates every link, shown apart),
#            not the loading of the graph; the stage's wall time and peak RSS (which the
#            loading dominates)
#   train    seconds per update at d=200, b=512, n=128 (rocone, STEPS steps of three
#            updates; the steady time after the first step, from the train log, which
#            leaves out start-up and the checkpoint's writing: scripts/train-timings),
#            dense and sparse Adam, with the optimiser's share (Adam and gradient zeroing,
#            averaged over all updates), the run's wall time outside its updates (start-up:
#            reading, initialising and mapping the model's memory; the checkpoint's
#            writing) and the peak RSS
#   rank     test queries ranked per second against all entities (rank's own count) with
#            the sparse run's checkpoint, and the peak RSS
#
# then prints the table and the ratios of sparse Adam's update time at the largest size to
# its time on FB15k-237 and on the smallest synthetic graph. SIZES (entity counts, or
# fb15k-237) and STEPS (default 12: single steps at 1.5M vary by ×2, so a few steps do
# not give a stable mean) may be set; KEEP=1 keeps the
# checkpoints (3.6 GB each at 1.5M entities). Needs the binaries (make build). Numbers are
# only comparable on one machine at one load: the README's table says where it was taken.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"fb15k-237 15000 150000 1500000"}
STEPS=${STEPS:-12}
RELATIONS=${RELATIONS:-237}
root=out/bench-scale
mkdir -p "$root"
results=$root/results.tsv
: >"$results"

# rss and wall read measure's line from a log file.
rss() { sed -n 's/.*peak RSS \([0-9.]*\) MiB.*/\1/p' "$1" | tail -1; }
wall() { sed -n 's/.*: wall \([0-9.]*\) s,.*/\1/p' "$1" | tail -1; }
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$results"; }

go build -o "$root/measure" ./scripts/measure
go build -o "$root/train-timings" ./scripts/train-timings
measure() { "$root/measure" -label "$1" -- "${@:2}"; }

for n in $SIZES; do
	dir=$root/$n
	mkdir -p "$dir"
	if [ "$n" = fb15k-237 ]; then
		kg=data/fb15k-237
		echo "== FB15k-237 ($kg)"
	else
		kg=$dir/kg
		edges=$((20 * n))
		echo "== $n entities, $edges facts ($((2 * edges)) edge rows)"
		if [ ! -f "$kg/synth.json" ]; then
			rm -rf "$kg"
			measure "synth $n" bin/sample synth --entities "$n" --relations "$RELATIONS" --edges "$edges" --seed 1 -o "$kg" 2>&1 | tee "$dir/synth.log"
		fi
		record "$n" synth_wall "$(wall "$dir/synth.log")"
		record "$n" synth_rss "$(rss "$dir/synth.log")"
	fi

	# Train queries: 13,200 in the path pool and 6,400 in the other, so that every update
	# of STEPS=12 has a full batch of 512 (batches do not straddle epochs). No 3in: on these
	# graphs, with little clustering, nearly every 3in attempt has no answer.
	# REUSE=1 keeps the queries (and the sampling figures) of an earlier run.
	if [ "${REUSE:-0}" != 1 ] || [ ! -f "$dir/train-queries.arrow" ] || [ ! -f "$dir/test-queries.arrow" ]; then
		rm -f "$dir/train-queries.arrow" "$dir/test-queries.arrow"
		measure "sample train $n" bin/sample generate --data "$kg" --split train --seed 1 \
			--types 1p,2p,3p,2i,3i,2in,inp,pin,pni \
			--count 1p=6000,2p=3600,3p=3600,2i=2400,3i=2400,2in=400,inp=400,pin=400,pni=400 \
			-o "$dir/train-queries.arrow" 2>&1 | tee "$dir/sample.log"
		bin/sample generate --data "$kg" --split test --seed 2 -q --types 1p,2p,2i,2in \
			--count 1p=100,2p=100,2i=100,2in=100 -o "$dir/test-queries.arrow"
	fi
	# "train 2p   300 queries, ..., 0.01s": the queries and the seconds of each type; 1p
	# apart, since BetaE's 1p enumerates every (head, relation) pair of the graph.
	awk '$1 == "train" && $4 == "queries," { t = $NF; sub(/s$/, "", t); if ($2 == "1p") p = t; else { q += $3; s += t } }
		END { printf "%d\t%.3f\t%.3f\n", q, s, p }' "$dir/sample.log" >"$dir/sample.rate"
	read -r sq ss s1p <"$dir/sample.rate"
	record "$n" sample_queries "$sq"
	record "$n" sample_seconds "$ss"
	record "$n" sample_1p_seconds "$s1p"
	record "$n" sample_wall "$(wall "$dir/sample.log")"
	record "$n" sample_rss "$(rss "$dir/sample.log")"

	for adam in dense sparse; do
		ck=$dir/$adam.arrow
		rm -f "$ck" "$dir/$adam-log.arrow"
		measure "train $adam $n" bin/train --train "$dir/train-queries.arrow" --model rocone --dim 200 --batch 512 \
			--negatives 128 --steps "$STEPS" --eval-every 0 --checkpoint-every 0 --adam "$adam" --checkpoint "$ck" --log "$dir/$adam-log.arrow" 2>&1 |
			tee "$dir/train-$adam.log" | grep -E 'measure|total|optimiser|checkpoints'
		# The checkpoint's recorded timings at full precision, per update.
		"$root/train-timings" "$ck" "$dir/$adam-log.arrow" >"$dir/train-$adam.rate"
		read -r updates avg _ _ _ opt per <"$dir/train-$adam.rate"
		record "$n" "train_${adam}_s_per_update" "$per"
		record "$n" "train_${adam}_overhead" "$(awk -v w="$(wall "$dir/train-$adam.log")" -v u="$updates" -v a="$avg" 'BEGIN { print w - u * a }')"
		record "$n" "train_${adam}_opt_s_per_update" "$opt"
		record "$n" "train_${adam}_rss" "$(rss "$dir/train-$adam.log")"
	done

	rm -f "$dir/ranks.arrow"
	measure "rank $n" bin/rank --checkpoint "$dir/sparse.arrow" --queries "$dir/test-queries.arrow" -o "$dir/ranks.arrow" 2>&1 |
		tee "$dir/rank.log" | grep -E 'queries in|measure'
	record "$n" rank_rate "$(sed -n 's/^rank: [0-9]* queries in [0-9.]*s (\([0-9.]*\)\/s).*/\1/p' "$dir/rank.log" | tail -1)"
	record "$n" rank_rss "$(rss "$dir/rank.log")"
	if [ "${KEEP:-0}" != 1 ]; then
		rm -f "$dir/dense.arrow" "$dir/sparse.arrow" "$dir/dense-log.arrow" "$dir/sparse-log.arrow"
	fi
done

# The table: one column per size.
echo
echo "== scaling ($(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg))"
awk -F'\t' '
	{ if (!($1 in seen)) { seen[$1] = 1; sizes[++ns] = $1 } v[$1, $2] = $3 }
	function cell(n, k, fmt) { return ((n, k) in v && v[n, k] != "") ? sprintf(fmt, v[n, k]) : "–" }
	function row(label, k, fmt,    i, s) {
		s = "| " label
		for (i = 1; i <= ns; i++) s = s " | " cell(sizes[i], k, fmt)
		print s " |"
	}
	END {
		s = "| stage (unit) "; d = "|---"
		for (i = 1; i <= ns; i++) { s = s " | " (sizes[i] ~ /^[0-9]+$/ ? sizes[i] " entities" : sizes[i]); d = d "|---:" }
		print s " |"; print d "|"
		for (i = 1; i <= ns; i++) {
			n = sizes[i]
			if ((n, "sample_seconds") in v && v[n, "sample_seconds"] > 0) v[n, "sample_rate"] = v[n, "sample_queries"] / v[n, "sample_seconds"]
		}
		row("synth: wall (s)", "synth_wall", "%.1f")
		row("synth: peak RSS (MiB)", "synth_rss", "%.0f")
		row("sample train: queries/s (sampling alone, types but 1p)", "sample_rate", "%.0f")
		row("sample train: 1p, enumerating every link (s)", "sample_1p_seconds", "%.2f")
		row("sample train: stage wall incl. loading (s)", "sample_wall", "%.1f")
		row("sample train: peak RSS (MiB)", "sample_rss", "%.0f")
		row("train dense Adam: s/update", "train_dense_s_per_update", "%.3f")
		row("  of which optimiser (s/update)", "train_dense_opt_s_per_update", "%.3f")
		row("train dense Adam: start-up + checkpoint (s)", "train_dense_overhead", "%.1f")
		row("train dense Adam: peak RSS (MiB)", "train_dense_rss", "%.0f")
		row("train sparse Adam: s/update", "train_sparse_s_per_update", "%.3f")
		row("  of which optimiser (s/update)", "train_sparse_opt_s_per_update", "%.3f")
		row("train sparse Adam: start-up + checkpoint (s)", "train_sparse_overhead", "%.1f")
		row("train sparse Adam: peak RSS (MiB)", "train_sparse_rss", "%.0f")
		row("rank: queries/s", "rank_rate", "%.1f")
		row("rank: peak RSS (MiB)", "rank_rss", "%.0f")
	}' "$results" | tee "$root/table.md"

# Issue 13's acceptance: sparse Adam's update at the largest synthetic size against FB15k-237
# and against the smallest synthetic size, at the same batch.
awk -F'\t' '
	$2 == "train_sparse_s_per_update" && $3 != "" { t[$1] = $3; if ($1 ~ /^[0-9]+$/) { if (!lo || $1 < lo) lo = $1; if ($1 > hi) hi = $1 } }
	END {
		if (hi == "" || !(hi in t)) exit
		if ("fb15k-237" in t) printf "sparse Adam s/update: %d entities %.4f, FB15k-237 %.4f: x%.2f\n", hi, t[hi], t["fb15k-237"], t[hi] / t["fb15k-237"]
		if (lo != hi) printf "sparse Adam s/update: %d entities %.4f, %d entities %.4f: x%.2f\n", hi, t[hi], lo, t[lo], t[hi] / t[lo]
	}' "$results" | tee -a "$root/table.md"
