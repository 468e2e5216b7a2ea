#!/usr/bin/env bash
# The device step in one command, for a lent GPU host (issue 18): the device, the training
# benchmarks (scripts/cuda/bench.sh), the side-by-side with QE-ConE (ConE's PyTorch code,
# unmodified) at ConE's FB15k-237 configuration on the same GPU, and a kernel-by-kernel
# profile of the training step (train --profile: CUDA events around every launch, a
# roofline table per kernel in Markdown and CSV; docs/gpu.md, "Profiling") for rocone at
# d=1600 and cone at d=800 (FP32 and --matmul tf32), and of rank on FB15k-237's test
# queries (rank --profile).
# Everything it measures lands under RESULTS, and summary.md there has the lines to record
# (the device, the rates, the side by side and its ratio, the profiles' step times).
#
# Prepare here (a machine with Go and cuda.h; no GPU needed):
#   scripts/cuda/device-step.sh --pack [QECONE_DIR]
# which builds the cuda-tagged binaries stripped into bin/device-step.tar.xz and copies
# QE-ConE's Python files (QECONE_DIR, default $QECONE: a checkout of
# github.com/MIRALab-USTC/QE-ConE, MIT) to bin/qecone. On the GPU host (carry both):
#   scripts/cuda/device-step.sh bin/device-step.tar.xz
#
# Environment: RESULTS (default out/device-step), STEPS (bench.sh's steps per configuration,
# default 150), QECONE_STEPS (default 150, after 20 warm-up steps), PROFILE_STEPS (the
# steps train --profile times, default 5-14), SKIP (space-separated parts to leave out:
# tests bench side qecone kernels profile ncu-train trial; qecone leaves out QE-ConE's half
# of the side by side when its figure is already at hand: QECONE_JSON, an earlier run's
# qecone-speed.json on the same kind of GPU, then gives the ratio). DEADLINE (seconds
# after the start) adds the trial at the end: a results entry trained for as many steps
# as fit, or for TRIAL_STEPS where they fit, with seed TRIAL_SEED (default 0), on
# TRIAL_DATASET (fb15k-237 or nell-995) (below; a DEADLINE, TRIAL_MS, TRIAL_OVERHEAD,
# TRIAL_STEPS or TRIAL_SEED that is not a number, or another dataset, skips it, saying
# so). NCU=1 adds Nsight Compute: the stall reasons, occupancy and speed of light of one
# launch of each hot kernel in the kernel bench (ncu-kernel-*.txt, up to a minute each),
# then (ncu-train) rank's score_all and the counters for the two training runs
# (PROFILE_SKIP and PROFILE_COUNT: the launches ncu skips, then profiles; default 2000 and
# 1200), where ncu manages to profile them.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

if [ "${1:-}" = --pack ]; then
	ref=${2:-${QECONE:-}}
	if [ -z "$ref" ] || [ ! -f "$ref/models.py" ]; then
		echo "device-step --pack: no QE-ConE at '$ref': pass the folder of a checkout of github.com/MIRALab-USTC/QE-ConE, or set QECONE" >&2
		exit 2
	fi
	make --no-print-directory check-cuda-h || exit 2
	set -e
	rm -rf bin/device-step && mkdir -p bin/device-step
	go build -buildvcs=auto -tags cuda -trimpath -ldflags='-s -w' -o bin/device-step/ ./cmd/sample ./cmd/train ./cmd/rank ./cmd/metrics
	go build -buildvcs=auto -trimpath -ldflags='-s -w' -o bin/device-step/ ./scripts/reference/exportqueries
	go test -c -tags cuda -trimpath -ldflags='-s -w' -o bin/device-step/cuda.test ./pkg/gpu
	go test -c -tags cuda -trimpath -ldflags='-s -w' -o bin/device-step/gpumodel.test ./pkg/gpu/gpumodel
	go test -c -tags cuda -trimpath -ldflags='-s -w' -o bin/device-step/train.test ./pkg/train
	scripts/commit-id >bin/device-step/COMMIT
	tar -C bin -cJf bin/device-step.tar.xz device-step
	rm -rf bin/qecone && mkdir -p bin/qecone && cp "$ref"/*.py bin/qecone/
	ls -l bin/device-step.tar.xz
	echo "carry bin/device-step.tar.xz and bin/qecone; run scripts/cuda/device-step.sh bin/device-step.tar.xz"
	exit 0
fi

pack=${1:-bin/device-step.tar.xz}
out=${RESULTS:-out/device-step}
mkdir -p "$out" || exit 2
exec > >(tee -a "$out/device-step.log") 2>&1
t0=$SECONDS
section() { echo; echo "== $* (+$((SECONDS - t0))s)"; }
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }

if [ -f "$pack" ]; then
	tar -C bin -xJf "$pack" || exit 2
	bin=bin/device-step
else
	bin=$pack
fi
section "device (commit $(cat "$bin/COMMIT" 2>/dev/null || echo unknown))"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv
[ "${NCU:-0}" = 1 ] && ncu --version 2>/dev/null | tail -1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
nproc

# The GPU's tests: scripts/cuda/gpu-check.sh --prebuilt --short (every kernel's parity with
# the CPU reference, FP32 and TF32; bit-identical runs; errors; the resident training step
# and 200 training steps against the CPU). The whole log is gpu-check.log; here, the verdicts
# and each failure's lines.
if ! skip tests; then
	section "GPU tests (scripts/cuda/gpu-check.sh --prebuilt --short)"
	timeout 240 scripts/cuda/gpu-check.sh --prebuilt "$bin/cuda.test" --short >"$out/gpu-check.log" 2>&1
	echo "gpu-check: exit $?"
	grep -E '^(== |--- FAIL|FAIL|ok|PASS$|gpu-check)|^ +--- FAIL|_test.go:[0-9]+:' "$out/gpu-check.log" | head -80
fi

bench=$out/bench
if ! skip bench; then
	section "bench.sh (STEPS=${STEPS:-150})"
	STEPS=${STEPS:-150} OUT_DIR=$bench timeout 300 scripts/cuda/bench.sh "$bin" || echo "bench.sh: exit $?"
fi
mkdir -p "$bench"
# The side by side and the profiles train on FB15k-237's train queries (bench.sh's, if it ran).
if { ! skip side || ! skip profile; } && [ ! -f "$bench/fb-train.arrow" ]; then
	"$bin/sample" generate --data data/fb15k-237 --split train -q -o "$bench/fb-train.arrow" || exit 1
fi

# ConE's FB15k-237 run (QE-ConE's scripts.sh): d 800, b 512, n 128, γ 30, center_reg 0.02,
# lr 5e-5, dropout 0.1, four loader workers; the MLP's width is ConE's 1600 on both sides.
cone=(--model cone --dim 800 --batch 512 --negatives 128 --gamma 30 --lambda 0.02 --lr 5e-5 --dropout 0.1)
# shellcheck source-path=SCRIPTDIR/../.. # sourced from the repository root (cd above)
. scripts/cuda/steady.sh
if ! skip side; then
	section "side by side: train --model cone at ConE's FB15k-237 configuration"
	if timeout 90 "$bin/train" --train "$bench/fb-train.arrow" "${cone[@]}" --steps 170 --eval-every 0 \
		--checkpoint-every 0 --device cuda --checkpoint "$out/side-cone.arrow" --log "$out/side-cone-log.arrow" \
		--overwrite >"$out/side-cone.txt" 2>&1 &&
		"$bin/metrics" curves --csv "$out/side-cone-log.csv" "$out/side-cone-log.arrow" >/dev/null 2>>"$out/side-cone.txt"; then
		read -r s _ dropped _ last _ < <(steady_rate "$out/side-cone-log.csv" 20)
		awk -v s="$s" -v dropped="$dropped" -v last="$last" 'BEGIN {
			printf "side by side: cone %.1f ms/step, %.1f steps/s (steps 20-%d less %d lr drops)\n", 1000 * s, 1 / s, last, dropped }' |
			tee "$out/side-cone-rate.txt"
	else
		echo "train: exit $?"
	fi
	grep -E 'total|GPU|sampling' "$out/side-cone.txt"
fi
if ! skip side && ! skip qecone; then
	section "side by side: QE-ConE, same configuration, same GPU"
	"$bin/exportqueries" "$bench/fb-train.arrow" "$out/fb-train.json" &&
		PYTHONUNBUFFERED=1 timeout 200 python3 scripts/reference/make_fixtures.py speed --reference bin/qecone \
			--queries "$out/fb-train.json" --steps "${QECONE_STEPS:-150}" --warmup 20 | tee "$out/qecone-speed.json" ||
		echo "QE-ConE: exit $?"
	rm -f "$out/fb-train.json"
fi
# The ratio, from this run's QE-ConE figure or, with SKIP=qecone, from QECONE_JSON (an
# earlier run's qecone-speed.json on the same kind of GPU).
qj=$out/qecone-speed.json
[ -s "$qj" ] || qj=${QECONE_JSON:-}
if [ -s "$out/side-cone-rate.txt" ] && [ -n "$qj" ] && [ -s "$qj" ]; then
	q=$(sed -n 's/.*"steps_per_s": *\([0-9.]*\).*/\1/p' "$qj")
	c=$(sed -n 's/.*, \([0-9.]*\) steps\/s.*/\1/p' "$out/side-cone-rate.txt")
	[ -n "$q" ] && [ -n "$c" ] && awk -v c="$c" -v q="$q" -v f="$qj" 'BEGIN {
		printf "side by side: cone %.1f steps/s, QE-ConE %.2f steps/s (%s): %.2fx\n", c, q, f, c / q }' |
		tee "$out/side-ratio.txt"
fi

# profile NAME ARGS...: the device profile of steps PROFILE_STEPS of a short run (train
# --profile) on PROFILE_TRAIN (default FB15k-237's train queries): profile-NAME.md (the
# roofline table, printed here too) and profile-NAME.csv.
profile() {
	local name=$1
	shift
	section "device profile: $name"
	if timeout 120 "$bin/train" --train "${PROFILE_TRAIN:-$bench/fb-train.arrow}" "$@" --steps 16 --eval-every 0 --checkpoint-every 0 \
		--device cuda --checkpoint "$out/prof-$name.arrow" --log "" --overwrite \
		--profile "$out/profile-$name.md" --profile-steps "${PROFILE_STEPS:-5-14}" >"$out/prof-$name.txt" 2>&1; then
		cat "$out/profile-$name.md"
		rm -f "$out/prof-$name.txt"
	else
		echo "train --profile $name: exit $?"
		tail -5 "$out/prof-$name.txt"
	fi
}

# ncu NAME ARGS...: Nsight Compute's per-kernel counters (NCU=1 only), one CSV row per
# launch (--page raw), PROFILE_COUNT launches after PROFILE_SKIP.
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
metrics+=,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum
metrics+=,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
ncu_profile() {
	local name=$1
	shift
	section "ncu profile: $name"
	timeout 110 ncu --clock-control none --replay-mode application --csv --page raw --metrics "$metrics" \
		--launch-skip "${PROFILE_SKIP:-2000}" --launch-count "${PROFILE_COUNT:-1200}" --log-file "$out/ncu-$name.csv" \
		"$bin/train" --train "$bench/fb-train.arrow" "$@" --steps 40 --eval-every 0 --checkpoint-every 0 \
		--device cuda --checkpoint "$out/prof-$name.arrow" --log "" --overwrite -q >"$out/ncu-$name.txt" 2>&1 ||
		{ echo "ncu $name: exit $?"; tail -5 "$out/ncu-$name.txt"; }
}
# ncu_kernel KERNEL BENCH: Nsight Compute's sections for one launch of KERNEL at the paper's
# size in the kernel bench BENCH (NCU=1 only): where its warps stall (WarpStateStats,
# SchedulerStats), its occupancy and launch, and its speed of light, as text in
# ncu-kernel-KERNEL.txt, with the stall reasons as metrics (cycles a warp spends stalled
# per issued instruction, by reason). The bench validates at two small sizes before it
# times, a case may launch the kernel several times a run (one per layer), and Go runs a
# bench once with N=1 before the timed run of 40: the first 30 matching launches are
# skipped, which lands in the timed run (the 2026-11-27 runs skipped 3 and profiled a
# validation launch).
stalls='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
ncu_kernel() {
	local kernel=$1 bench=$2
	section "ncu: $kernel ($bench)"
	timeout 60 ncu --kernel-name "$kernel" --launch-skip 30 --launch-count 1 \
		--section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
		--section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
		--metrics "$stalls,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum" \
		"$bin/cuda.test" -test.run '^$' -test.bench "^BenchmarkKernels/$bench\$" -test.benchtime 40x \
		>"$out/ncu-kernel-$kernel.txt" 2>&1 || echo "ncu $kernel: exit $?"
	grep -E "Duration|Achieved Occupancy|Registers Per|Compute \(SM\) Throughput|Memory Throughput|Issued Ipc|No Eligible|Warp Cycles Per Issued" \
		"$out/ncu-kernel-$kernel.txt" | head -12
	grep -E "l1tex__data_bank_conflicts" "$out/ncu-kernel-$kernel.txt" | awk '{print "    " $1, $NF}'
	# The stall reasons, largest first (cycles per issued instruction).
	grep -E "smsp__average_warps_issue_stalled_" "$out/ncu-kernel-$kernel.txt" |
		awk '{v = $NF; gsub(",", "", v); n = $1; sub("smsp__average_warps_issue_stalled_", "", n); sub("_per_issue_active.ratio", "", n); if (v + 0 >= 0.05) printf "    stall %-22s %6.2f\n", n, v}' |
		sort -k3 -rn | head -8
}
# The kernel benches (pkg/gpu/kernelbench_test.go): each hot kernel's versions,
# validated against the CPU reference, then timed at the paper's size.
if ! skip kernels; then
	section "kernel benches"
	timeout 120 "$bin/cuda.test" -test.run '^$' -test.bench Kernels -test.benchtime 50x | tee "$out/kernel-benches.txt" ||
		echo "kernel benches: exit $?"
fi
if ! skip profile; then
	profile rocone-d1600 --preset fb15k-237
	# The same with the newest choices turned back ($ROCONE_GPU_REVERT, pkg/gpu/revert.go):
	# kernel by kernel, what they changed.
	ROCONE_GPU_REVERT=gemm-cost,etab,stacked profile rocone-d1600-reverted --preset fb15k-237
	# NELL-995 with and without the entity half-angle table: at bf5d4b1 its step was
	# 0.78 ms faster without (bench.sh), where FB15k-237's was not; kernel by kernel, why.
	if [ -f "$bench/nell-train.arrow" ] ||
		"$bin/sample" generate --data data/nell-995 --split train -q -o "$bench/nell-train.arrow"; then
		PROFILE_TRAIN=$bench/nell-train.arrow profile nell-rocone-d800 --preset nell995
		PROFILE_TRAIN=$bench/nell-train.arrow ROCONE_GPU_REVERT=etab profile nell-rocone-d800-no-etab --preset nell995
	fi
	profile cone-d800 "${cone[@]}"
	profile rocone-d1600-tf32 --preset fb15k-237 --matmul tf32
	profile cone-d800-tf32 "${cone[@]}" --matmul tf32
	# rank's: every batch of FB15k-237's test queries at d=1600 (bench.sh's checkpoint,
	# or profile rocone-d1600's), a roofline table per batch.
	section "device profile: rank, FB15k-237 test, d=1600"
	ck=$bench/fb15k-237-rocone-d1600.arrow
	[ -f "$ck" ] || ck=$out/prof-rocone-d1600.arrow
	[ -f "$bench/fb-test.arrow" ] || "$bin/sample" generate --data data/fb15k-237 --split test -q -o "$bench/fb-test.arrow"
	if timeout 60 "$bin/rank" --checkpoint "$ck" --queries "$bench/fb-test.arrow" --device cuda -o "$out/prof-rank.arrow" \
		--profile "$out/profile-rank-d1600.md" >"$out/prof-rank.txt" 2>&1; then
		cat "$out/profile-rank-d1600.md"
		tail -1 "$out/prof-rank.txt"
	else
		echo "rank --profile: exit $?"
		tail -5 "$out/prof-rank.txt"
	fi
	if [ "${NCU:-0}" = 1 ]; then
		ncu_kernel gemm_nt linear/reg128
		ncu_kernel gemm_pipe_tn linear/pipe128
		ncu_kernel gemm_pipe_nn linear/pipe128
		ncu_kernel gemm_tf32_nt linear/tf32-reg128
		ncu_kernel gemm_tf32_pipe_nt linear/tf32-pipe128
		ncu_kernel gemm_tf32_pipe_nn linear/tf32-pipe128
		ncu_kernel gemm_tf32_pipe_tn linear/tf32-pipe128
		ncu_kernel distance_fwd_tab distance_fwd/table
		ncu_kernel distance_bwd_q_tab distance_bwd/table_pairs
		ncu_kernel distance_fwd_etab distance_fwd/etab
		ncu_kernel distance_bwd_q_etab distance_bwd/etab_pairs
		if ! skip ncu-train; then
			ncu_kernel score_all score_all/tables
			ncu_profile rocone-d1600 --preset fb15k-237
			ncu_profile cone-d800 "${cone[@]}"
		fi
	fi
fi
rm -f "$out"/*.arrow "$bench"/*.arrow

# The trial (only with DEADLINE, seconds after this script's start): a results entry
# (scripts/paper-run.sh) of rocone on TRIAL_DATASET (fb15k-237, the default, or nell-995)
# at its preset, seed TRIAL_SEED (default 0), trained on the device for as many steps as
# fit before DEADLINE (in thousands; the schedule's drops scale with them), or for
# TRIAL_STEPS where those fit (so that trials of several sessions are seeds of one
# configuration, averaged in the results table; the steps are part of the
# configuration), then ranked on the test queries on the device, into $RESULTS/trial/ for
# results/.
# The step's time is bench.sh's rocone rate for the dataset in RESULTS (FB15k-237's: the
# slower of its two rows, the default's and the one after the A/B rows), or TRIAL_MS;
# TRIAL_OVERHEAD (default 75) seconds are kept for sampling, loading, the last
# checkpoint, ranking and metrics. The work folder (TRIAL_WORK, default
# out/trial-work: the train queries and the checkpoint, about 1 GB) is removed after.
# trial_lines FILE: paper-run's verdicts, and the entry's MRR row and its line in the runs' list.
trial_lines() {
	awk '/^paper-run/ { print } /^paper-run: wrote/ { w = 1 } w && /^\| rocone / && !r { print; r = 1 } w && /^\| `/ { print }' "$1"
}
if [ -n "${DEADLINE:-}" ] && ! skip trial; then
	ds=${TRIAL_DATASET:-fb15k-237}
	section "trial: a results entry, $ds rocone at the preset, done by +${DEADLINE}s"
	case $ds in
	fb15k-237) row=fb15k-237-rocone-d1600 ;;
	nell-995) row=nell995-rocone-d800 ;;
	*) row= ;;
	esac
	ms=${TRIAL_MS:-$(awk -v row="$row" '($1 == row || $1 == row "-again") && $2 > m { m = $2 }
		END { if (m > 0) print m }' "$bench/rates.txt" 2>/dev/null)}
	overhead=${TRIAL_OVERHEAD:-75}
	seed=${TRIAL_SEED:-0}
	want=${TRIAL_STEPS:-}
	rm -rf "$out/trial" "$out/trial.txt"
	steps=0
	if [ -z "$row" ]; then
		echo "trial: skipped: TRIAL_DATASET=$ds: want fb15k-237 or nell-995"
	elif ! [[ $DEADLINE =~ ^[0-9]+$ && $overhead =~ ^[0-9]+$ ]]; then
		echo "trial: skipped: DEADLINE=$DEADLINE and TRIAL_OVERHEAD=$overhead must be whole seconds"
	elif ! [[ $seed =~ ^(0|[1-9][0-9]{0,8})$ ]]; then
		echo "trial: skipped: TRIAL_SEED=$seed must be a whole number"
	elif [ -n "$want" ] && ! [[ $want =~ ^([2-9]|[1-9][0-9]{1,5})000$ ]]; then
		echo "trial: skipped: TRIAL_STEPS=$want must be whole thousands, 2000 or more"
	elif ! [[ $ms =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v ms="$ms" 'BEGIN { exit !(ms > 0) }'; then
		echo "trial: skipped: no step time: ${ms:-no bench rate in $bench/rates.txt}; set TRIAL_MS (milliseconds > 0)"
	else
		left=$((DEADLINE - (SECONDS - t0) - overhead))
		steps=$(awk -v ms="$ms" -v s="$left" 'BEGIN { n = int(s * 1000 / (ms * 1.03) / 1000) * 1000; print (n > 0 ? n : 0) }')
		if [ -n "$want" ] && [ "$steps" -lt "$want" ]; then
			echo "trial: skipped: TRIAL_STEPS=$want do not fit: ${left}s of training left at ${ms} ms/step fit $steps"
			steps=0
		elif [ -n "$want" ]; then
			steps=$want
		elif [ "$steps" -lt 2000 ]; then
			echo "trial: skipped: ${left}s of training left at ${ms} ms/step is under 2,000 steps"
		fi
	fi
	if [ "$steps" -ge 2000 ]; then
		work=${TRIAL_WORK:-out/trial-work}
		entry=$out/trial/$ds/rocone/seed$seed-$((steps / 1000))k-steps
		rm -rf "$work"
		echo "trial: $steps steps at ${ms} ms/step (${left}s of training) into $entry"
		BIN=$bin STEPS=$steps BUDGET=$((left + 45)) scripts/paper-run.sh "$ds" rocone "$seed" "$work" "$entry" \
			>"$out/trial.txt" 2>&1
		echo "paper-run: exit $?"
		trial_lines "$out/trial.txt"
		rm -rf "$work"
	fi
fi

# summary.md: what to record (the device, bench.sh's rates and rank, the side by side, the
# profiles' step times), from the files the parts wrote.
{
	echo "# Device step: commit $(cat "$bin/COMMIT" 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo '```'
	grep -m1 '^GPU:' "$out/gpu-check.log" 2>/dev/null
	tail -1 "$out/gpu-check.log" 2>/dev/null
	cat "$bench/rates.txt" "$out/side-cone-rate.txt" "$out/side-ratio.txt" 2>/dev/null
	# Each kernel bench's versions side by side: µs a run, and the ratio to the first
	# version listed (the oldest kernel of each case).
	if [ -s "$out/kernel-benches.txt" ]; then
		echo "kernel benches (µs; × of the case's first version):"
		awk '$1 ~ /^BenchmarkKernels\// && $4 == "ns/op" {
			name = $1; sub(/^BenchmarkKernels\//, "", name); sub(/-[0-9]+$/, "", name)
			split(name, p, "/"); c = p[1]; us = $3 / 1000
			if (!(c in first)) first[c] = us
			printf "  %-36s %10.1f  %5.2fx\n", name, us, first[c] / us
		}' "$out/kernel-benches.txt"
	fi
	for f in "$out"/profile-*.md; do
		[ -f "$f" ] || continue
		echo "${f##*/}:"
		grep -E '^Wall time per' "$f" | sed 's/^/  /'
		# The GEMMs' share (every gemm_* kernel, split-K sums included), for the policies' A/B.
		awk -F'|' 'NF >= 13 && $2 ~ /`gemm/ { ms += $4; n += $3 } END { if (n) printf "  GEMMs (every gemm_* row): %.3f ms in %.1f launches\n", ms, n }' "$f"
		# The device's idle time between launches (roofline.WriteIdle), and its top place.
		sed -n 's/^Between one launch.s end and the next one.s start the device \(waited [^:]*\):.*/  idle: \1/p' "$f"
		grep -m1 -A2 '^| after | before |' "$f" | tail -1 | sed 's/^/  most idle: /'
	done
	if [ -s "$out/trial.txt" ]; then
		echo "trial (scripts/paper-run.sh, $out/trial):"
		trial_lines "$out/trial.txt" | sed 's/^/  /'
	fi
	echo '```'
} >"$out/summary.md"
echo "summary: $out/summary.md"
section "done"
