#!/usr/bin/env bash
# `make test-slurm`: the Slurm pipeline on a real single-node Slurm, against the Makefile's.
#
#  1. starts a private cluster (scripts/slurm/start.sh: installs slurm-wlm and munge if
#     missing) in a temporary folder; a trap stops exactly its daemons, also on failure;
#  2. submits the whole pipeline (pipelines/slurm/submit.sh) on testdata/tiny with 2 seeds,
#     each split sampled in 2 shards and merged (SAMPLE_SHARDS=2), embed and rank in 3 shards
#     each (SHARDS=3) and small flags, waits for it (pipelines/slurm/wait.sh; a failed job
#     fails the test with its log printed) and checks every stage ran as the array it should;
#  3. caching: a second submit submits nothing; deleting the test split's sample shard 0/2
#     would resample it alone (sample task 4), merge the test split, then embed, rank and
#     metrics (a dry run); after deleting seed 1's ranks shard 1/3, a
#     submit holds rank task 4 alone, with no dependency, then metrics, and metrics comes out
#     the same;
#     after touching the train queries, train, embed and rank of both seeds and metrics;
#  4. a failing stage: a training that fails is reported by wait.sh with its log, and the jobs
#     after it are cancelled (none is left pending) and write nothing;
#  4b. a time limit: a training of 320 slowed-down steps (64 s) under a 1-minute limit
#     with TRAIN_GRACE=5 is signalled before the limit, checkpoints, requeues itself and
#     resumes (not restarts) from its partial checkpoint; the DAG after it completes by
#     itself, and the model equals an uninterrupted training's, tensors and state bit for
#     bit (scripts/checkpoint-diff); per-stage partitions reach sbatch (a dry run);
#  5. job.sh's clean-up, without Slurm: a command that changes its target and fails leaves it
#     at TARGET.failed-ID, one that succeeds without writing its target fails;
#  6. runs pipelines/Makefile on the same inputs into the same OUT path (the Slurm run moved
#     aside), sampling unsharded, and compares: queries (so the merged sample shards are the
#     unsharded files), metrics.arrow, metrics.md and the plots byte for byte;
#     models, cones and ranks differ only in recorded wall-clock timings and the model file's
#     hash that cones and ranks carry, so they are compared through metrics (every per-type
#     MRR and Hits figure with its bootstrap interval);
#  7. the shards are the unsharded run: each seed ranked unsharded by bin/rank gives, through
#     bin/metrics, the same table (metrics.md but its first line, which names the files).
#
# TEST_SLURM_KEEP=1 keeps the temporary folder (logs, artifacts) after a success too.
#
# The checks read "A && B || fail ...": fail unless every condition holds, so fail running
# when A holds and B does not is what is meant (SC2015's warning).
# shellcheck disable=SC2015
set -euo pipefail
cd "$(dirname "$0")/../.."
T=$(mktemp -d /tmp/rocone-test-slurm.XXXXXX)
CLUSTER=$T/cluster
ok=0
cleanup() {
	scripts/slurm/stop.sh "$CLUSTER" || true
	if [ $ok -eq 1 ] && [ "${TEST_SLURM_KEEP:-0}" != 1 ]; then rm -rf "$T"; else echo "test-slurm: files kept in $T" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "test-slurm: FAIL: $*" >&2; exit 1; }
step() { echo "test-slurm: $*" >&2; }
t0=$SECONDS

scripts/slurm/start.sh "$CLUSTER"
export SLURM_CONF=$CLUSTER/slurm.conf

# The binaries, built once; the Makefile run below uses these same files (make -o).
make --no-print-directory -s bin/sample bin/train bin/embed bin/rank bin/metrics

OUT=$T/out
COUNTS="--count 1p=20,2p=8,3p=8,2i=8,3i=8,ip=8,pi=8,2u=8,up=8,2in=6,3in=6,inp=6,pin=6,pni=6"
VARS=(DATA=testdata/tiny DATASET=tiny "OUT=$OUT" "SEEDS=0 1" "VALID_FLAGS=$COUNTS" "TEST_FLAGS=$COUNTS"
	"TRAIN_FLAGS=--dim 8 --steps 4 --batch 16 --negatives 4 --eval-every 2 -q" "METRICS_FLAGS=--resamples 50" SHARDS=3)
# Light jobs for a 2-core node: every limit given (so the flags are exercised) but small.
# Sampling is sharded on Slurm alone: the Makefile run of step 6 samples unsharded.
SLURM_VARS=(BUILD=0 SAMPLE_SHARDS=2)
for s in SAMPLE MERGE TRAIN EMBED RANK METRICS; do SLURM_VARS+=("TIME_$s=0:10:00" "MEM_$s=1G" "CPUS_$s=1"); done
submit() { pipelines/slurm/submit.sh "${VARS[@]}" "${SLURM_VARS[@]}" "$@"; }
# waitfor FILE SECONDS: wait.sh on the jobs a submit printed to FILE.
waitfor() {
	local j
	mapfile -t j < <(awk '{ print $2 }' "$1")
	WAIT_TIMEOUT=$2 pipelines/slurm/wait.sh "${j[@]}"
}

# --- 2. the whole pipeline ------------------------------------------------------------------
step "submitting the pipeline"
submit >"$T/jobs1"
cat "$T/jobs1" >&2
[ "$(awk '{ print $1 ":" $3 }' "$T/jobs1" | tr '\n' ' ')" = "sample:0,1,2,3,4,5 merge:0,1,2 train:0,1 embed:0,1,2,3,4,5 rank:0,1,2,3,4,5 metrics:- " ] ||
	fail "the first submit should hold sample 0-5 (3 splits × 2 shards), merge 0,1,2, train 0,1, embed/rank 0-5 (2 seeds × 3 shards) and metrics:"$'\n'"$(cat "$T/jobs1")"
waitfor "$T/jobs1" 300 || fail "the pipeline's jobs did not all complete (logs above)"
for f in shards/{train,valid,test}-queries-{0,1}-of-2 train-queries valid-queries test-queries rocone/seed{0,1}/model \
	rocone/seed{0,1}/cones-{0,1,2}-of-3 rocone/seed{0,1}/ranks-{0,1,2}-of-3 rocone/metrics; do
	[ -s "$OUT/$f.arrow" ] || fail "$OUT/$f.arrow is missing"
done
[ -s "$OUT/rocone/metrics.md" ] || fail "no metrics.md"
# shellcheck disable=SC2012 # counting job logs, whose names (STAGE-JOBID_TASK.log) have no newline
n=$(ls "$OUT/logs" | wc -l)
[ "$n" -eq 24 ] || fail "expected 24 job logs in $OUT/logs, found $n: $(ls "$OUT/logs")"
# Sample task k is split k/2's shard k%2; merge task i joins split i's 2 shards.
grep -qxF -- "== bin/sample generate --data testdata/tiny --split test --seed 0 $COUNTS --shard 0/2 -o $OUT/shards/test-queries-0-of-2.arrow" "$OUT"/logs/sample-*_4.log &&
	grep -qxF -- "== bin/sample merge -q -o $OUT/valid-queries.arrow $OUT/shards/valid-queries-0-of-2.arrow $OUT/shards/valid-queries-1-of-2.arrow" "$OUT"/logs/merge-*_1.log ||
	fail "sample task 4 or merge task 1 ran another command:"$'\n'"$(grep -h '^== [^j]' "$OUT"/logs/sample-*_4.log "$OUT"/logs/merge-*_1.log)"
grep -L '^== job .*: done in' "$OUT"/logs/*.log | grep . && fail "the logs above do not end in done"
# The per-stage resources reached Slurm.
train=$(scontrol show job -o "$(awk '$1 == "train" { print $2 }' "$T/jobs1")" | head -1)
for want in TimeLimit=00:10:00 MinMemoryNode=1G CPUs/Task=1 JobName=rocone-train "Comment=$(realpath "$OUT")"; do
	case " $train " in *" $want "*) ;; *) fail "the train job lacks $want: $train" ;; esac
done
# DEVICE=cuda asks for a GPU for train, embed and rank only (checked on the sbatch lines).
pipelines/slurm/submit.sh -n "${VARS[@]}" "${SLURM_VARS[@]}" OUT="$T/cuda" DEVICE=cuda >"$T/dry-cuda"
[ "$(grep -c -- '--gres=gpu:1 ' "$T/dry-cuda")" -eq 3 ] && ! grep -E -- '--job-name=rocone-(sample|merge|metrics) .*--gres' "$T/dry-cuda" &&
	grep -q -- ' --device cuda ' "$T/dry-cuda" || fail "DEVICE=cuda's sbatch lines:"$'\n'"$(cat "$T/dry-cuda")"
# Per-stage partitions: the GPU stages on GPU_PARTITION, the rest on CPU_PARTITION, one
# stage's own over both; with DEVICE=cpu every stage is a CPU stage.
partitions() { grep '^sbatch ' "$1" | sed 's/.*--job-name=rocone-\([a-z]*\) .*--partition=\([^ ]*\) .*/\1:\2/' | tr '\n' ' '; }
pipelines/slurm/submit.sh -n "${VARS[@]}" "${SLURM_VARS[@]}" OUT="$T/parts" DEVICE=cuda GPU_PARTITION=gpu CPU_PARTITION=cpu PARTITION_RANK=big >"$T/dry-parts"
[ "$(partitions "$T/dry-parts")" = "sample:cpu merge:cpu train:gpu embed:gpu rank:big metrics:cpu " ] ||
	fail "per-stage partitions (DEVICE=cuda):"$'\n'"$(cat "$T/dry-parts")"
pipelines/slurm/submit.sh -n "${VARS[@]}" "${SLURM_VARS[@]}" OUT="$T/parts" GPU_PARTITION=gpu CPU_PARTITION=cpu >"$T/dry-parts"
[ "$(partitions "$T/dry-parts")" = "sample:cpu merge:cpu train:cpu embed:cpu rank:cpu metrics:cpu " ] ||
	fail "per-stage partitions (DEVICE=cpu):"$'\n'"$(cat "$T/dry-parts")"

# --- 3. caching ---------------------------------------------------------------------------------
step "caching: a second submit"
submit >"$T/jobs2"
[ ! -s "$T/jobs2" ] || fail "a second submit submitted:"$'\n'"$(cat "$T/jobs2")"
cp -p "$OUT/rocone/metrics.arrow" "$T/metrics-first.arrow"
# A missing sample shard: that shard alone, its split's merge, and what reads the test split.
mv "$OUT/shards/test-queries-0-of-2.arrow" "$T/test-shard0.arrow"
submit -n >"$T/dry-shard"
mv "$T/test-shard0.arrow" "$OUT/shards/test-queries-0-of-2.arrow"
[ "$(grep -o -- '--job-name=rocone-[a-z]* .*--array=[^ ]*' "$T/dry-shard" | sed 's/--job-name=rocone-\([a-z]*\) .*--array=/\1:/' | tr '\n' ' ')" = 'sample:4 merge:2 embed:0\,1\,2\,3\,4\,5 rank:0\,1\,2\,3\,4\,5 ' ] &&
	grep -- '--job-name=rocone-merge ' "$T/dry-shard" | grep -q -- '--dependency=afterok:\\<sample\\> ' &&
	grep -- '--job-name=rocone-embed ' "$T/dry-shard" | grep -q -- '--dependency=afterok:\\<merge\\> ' &&
	[ "$(grep -c '^sbatch ' "$T/dry-shard")" -eq 5 ] || fail "after deleting the test split's sample shard 0/2:"$'\n'"$(cat "$T/dry-shard")"
rm "$OUT/rocone/seed1/ranks-1-of-3.arrow"
submit -n >"$T/dry3"
grep -q -- '--job-name=rocone-rank .*--array=4 ' "$T/dry3" || fail "after deleting seed 1's ranks shard 1/3, no rank task 4 alone:"$'\n'"$(cat "$T/dry3")"
grep -- '--job-name=rocone-rank ' "$T/dry3" | grep -q -- --dependency && fail "rank depends on a job although its inputs are cached:"$'\n'"$(cat "$T/dry3")"
grep -- '--job-name=rocone-metrics ' "$T/dry3" | grep -q -- '--dependency=afterok:\\<rank\\> ' || fail "metrics should wait for rank alone:"$'\n'"$(cat "$T/dry3")"
[ "$(grep -c '^sbatch ' "$T/dry3")" -eq 2 ] || fail "after deleting seed 1's ranks, more than rank and metrics:"$'\n'"$(cat "$T/dry3")"
submit >"$T/jobs3"
[ "$(awk '{ print $1 ":" $3 }' "$T/jobs3" | tr '\n' ' ')" = "rank:4 metrics:- " ] || fail "resubmit after deleting seed 1's ranks:"$'\n'"$(cat "$T/jobs3")"
waitfor "$T/jobs3" 120 || fail "the rank rerun failed (logs above)"
cmp "$OUT/rocone/metrics.arrow" "$T/metrics-first.arrow" || fail "metrics changed after rerunning seed 1's rank"
submit >"$T/jobs4"
[ ! -s "$T/jobs4" ] || fail "a submit after the rerun submitted:"$'\n'"$(cat "$T/jobs4")"
# Changed flags remake their stage and what follows (the stamps under .flags/, as in the
# Makefile); a dry run writes no stamp, so the same flags again submit nothing.
submit -n "METRICS_FLAGS=--resamples 60" >"$T/dry-flags"
[ "$(grep -c '^sbatch ' "$T/dry-flags")" -eq 1 ] && grep -q -- '--job-name=rocone-metrics ' "$T/dry-flags" ||
	fail "after changing METRICS_FLAGS, not metrics alone:"$'\n'"$(cat "$T/dry-flags")"
submit -n "TRAIN_FLAGS=--dim 8 --steps 5 --batch 16 --negatives 4 --eval-every 2 -q" >"$T/dry-flags"
[ "$(grep -o -- '--job-name=rocone-[a-z]* .*--array=[^ ]*' "$T/dry-flags" | sed 's/--job-name=rocone-\([a-z]*\) .*--array=/\1:/' | tr '\n' ' ')" = 'train:0\,1 embed:0\,1\,2\,3\,4\,5 rank:0\,1\,2\,3\,4\,5 ' ] ||
	fail "after changing TRAIN_FLAGS:"$'\n'"$(cat "$T/dry-flags")"
# A seed dropped remakes the table; another DATA folder of older files (a copy keeping
# their times) resamples, and all that follows.
submit -n "SEEDS=0" >"$T/dry-flags"
[ "$(grep -c '^sbatch ' "$T/dry-flags")" -eq 1 ] && grep -q -- '--job-name=rocone-metrics ' "$T/dry-flags" ||
	fail "after dropping seed 1, not metrics alone:"$'\n'"$(cat "$T/dry-flags")"
mkdir "$T/older-tiny" && cp -p testdata/tiny/* "$T/older-tiny/" && touch -d @1000000000 "$T/older-tiny"/*
submit -n "DATA=$T/older-tiny" >"$T/dry-flags"
[ "$(grep -o -- '--job-name=rocone-[a-z]*' "$T/dry-flags" | tr '\n' ' ')" = '--job-name=rocone-sample --job-name=rocone-merge --job-name=rocone-train --job-name=rocone-embed --job-name=rocone-rank --job-name=rocone-metrics ' ] ||
	fail "after changing DATA to a folder of older files:"$'\n'"$(cat "$T/dry-flags")"
submit -n >"$T/dry-flags"
[ ! -s "$T/dry-flags" ] || fail "a dry run with other flags changed a stamp:"$'\n'"$(cat "$T/dry-flags")"
# Touching the train queries makes every seed's model stale, and all after it; nothing is sampled.
touch "$OUT/train-queries.arrow"
submit -n >"$T/dry4"
[ "$(grep -o -- '--job-name=rocone-[a-z]* .*--array=[^ ]*' "$T/dry4" | sed 's/--job-name=rocone-\([a-z]*\) .*--array=/\1:/' | tr '\n' ' ')" = 'train:0\,1 embed:0\,1\,2\,3\,4\,5 rank:0\,1\,2\,3\,4\,5 ' ] &&
	[ "$(grep -c '^sbatch ' "$T/dry4")" -eq 4 ] || fail "after touching the train queries:"$'\n'"$(cat "$T/dry4")"

# --- 4. a failing stage ---------------------------------------------------------------------------
step "a failing training (the FAILED lines below are expected)"
BAD=$T/bad
mkdir -p "$BAD"
cp -p "$OUT"/*-queries.arrow "$BAD/" # cached queries: only train and what follows run
pipelines/slurm/submit.sh "${VARS[@]}" "${SLURM_VARS[@]}" "OUT=$BAD" "SEEDS=0" SHARDS=1 SAMPLE_SHARDS=1 "TRAIN_FLAGS=--dim 8 --steps 4 --lr -1 -q" >"$T/jobs5"
[ "$(awk '{ print $1 }' "$T/jobs5" | tr '\n' ' ')" = "train embed rank metrics " ] || fail "the failing run's submit:"$'\n'"$(cat "$T/jobs5")"
if waitfor "$T/jobs5" 120 2>"$T/wait5"; then fail "wait.sh reported success for a failing training"; fi
cat "$T/wait5" >&2
grep -Eq 'rocone-train +FAILED' "$T/wait5" || fail "wait.sh does not report the failed training"
grep -q "^---- .*rocone-train FAILED.*train-" "$T/wait5" || fail "wait.sh does not print the failed training's log"
[ "$(grep -Ec 'rocone-(embed|rank|metrics) +(CANCELLED|PENDING \(dependency failed\))' "$T/wait5")" -eq 3 ] ||
	fail "embed, rank and metrics should be cancelled after the failed training"
[ ! -e "$BAD/rocone/seed0/model.arrow" ] && [ ! -e "$BAD/rocone/metrics.arrow" ] || fail "the failed run left artifacts"

# --- 4b. a training cut by its time limit ------------------------------------------------------
step "a training under a 1-minute time limit: checkpoint, requeue, resume, the DAG completes (about 2 minutes)"
LIM=$T/limit
mkdir -p "$LIM"
cp -p "$OUT"/*-queries.arrow "$LIM/" # cached queries: train and what follows run
LFLAGS="--dim 8 --steps 320 --batch 16 --negatives 4 --eval-every 80"
# --test-step-sleep (a hidden flag of train: a sleep after every step, nothing computed
# changes) makes the 320 steps last 64 s. slurmctld checks time limits every 30 s and
# sends the --signal once the end is less than TRAIN_GRACE + 30 s away: with a 1-minute
# limit and TRAIN_GRACE=5, between 25 and 55 s into each run, before the limit's own kill
# (60 to 90 s). So the first run is certainly cut short, every run makes 25 s of progress,
# and the training ends in its second or third run.
pipelines/slurm/submit.sh "${VARS[@]}" "${SLURM_VARS[@]}" "OUT=$LIM" SEEDS=0 SHARDS=1 SAMPLE_SHARDS=1 \
	"TRAIN_FLAGS=$LFLAGS --test-step-sleep 200ms" TIME_TRAIN=0:01:00 TRAIN_GRACE=5 >"$T/jobs6"
[ "$(awk '{ print $1 }' "$T/jobs6" | tr '\n' ' ')" = "train embed rank metrics " ] || fail "the time-limit run's submit:"$'\n'"$(cat "$T/jobs6")"
trainjob=$(awk '$1 == "train" { print $2 }' "$T/jobs6")
waitfor "$T/jobs6" 420 || fail "the pipeline with a time-limited training did not complete by itself (logs above)"
restarts=$(scontrol show job -o "$trainjob" | grep -o 'Restarts=[0-9]*' | head -1 | cut -d= -f2)
tlog=$(ls "$LIM"/logs/train-"$trainjob"_0.log)
[ "${restarts:-0}" -ge 1 ] || fail "the train job was not requeued (Restarts=${restarts:-?}):"$'\n'"$(cat "$tlog")"
grep -q 'the time limit is near (SIGUSR1)' "$tlog" && grep -q ': requeued after .* it continues from its checkpoint' "$tlog" &&
	grep -q "^resuming $LIM/rocone/seed0/model.partial.arrow: it holds [1-9][0-9]* of 320 steps of this run" "$tlog" &&
	! grep -q '^starting a new run: .*holds' "$tlog" || fail "the train job's log does not show a checkpoint, a requeue and a resume:"$'\n'"$(cat "$tlog")"
[ ! -e "$LIM/rocone/seed0/model.partial.arrow" ] || fail "the partial checkpoint is left after the training finished"
[ -s "$LIM/rocone/metrics.arrow" ] || fail "no metrics after the time-limited training"
# shellcheck disable=SC2086 # LFLAGS is a list of flags, split into words on purpose
bin/train --train "$LIM/train-queries.arrow" --valid "$LIM/valid-queries.arrow" --model rocone --seed 0 --device cpu $LFLAGS -q \
	--checkpoint "$T/straight.arrow" --log "" || fail "the uninterrupted training failed"
go run ./scripts/checkpoint-diff "$T/straight.arrow" "$LIM/rocone/seed0/model.arrow" ||
	fail "the training Slurm's time limit interrupted differs from an uninterrupted one"
step "the train job ran $((restarts + 1)) times and ended as the uninterrupted training"

# --- 5. job.sh's clean-up -------------------------------------------------------------------------
step "job.sh: a failed command's target is moved aside"
J=$T/job
mkdir -p "$J"
echo old >"$J/kept"
touch -d '2000-01-01' "$J/kept"
printf '%s\t%s\n' "$J/changed" "echo partial > $J/changed; exit 3" "$J/kept" "exit 4" "$J/none" "true" >"$J/tasks"
for i in 0 1 2; do
	if SLURM_JOB_ID=77 SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=$i SLURM_JOB_NAME=t pipelines/slurm/job.sh "$J/tasks" >"$J/log$i" 2>&1; then
		fail "job.sh task $i succeeded:"$'\n'"$(cat "$J/log$i")"
	fi
done
[ ! -e "$J/changed" ] && [ "$(cat "$J/changed.failed-77_0")" = partial ] || fail "a changed target of a failed command was not moved to .failed-77_0"
[ "$(cat "$J/kept")" = old ] && [ ! -e "$J/kept.failed-77_1" ] || fail "an unchanged target of a failed command was touched"
grep -q "wrote no $J/none" "$J/log2" || fail "a command that wrote no target was not reported:"$'\n'"$(cat "$J/log2")"

# --- 6. the Makefile pipeline on the same inputs --------------------------------------------------
step "the Makefile pipeline into the same OUT"
mv "$OUT" "$T/slurm-out"
make --no-print-directory -s -f pipelines/Makefile -o bin/sample -o bin/train -o bin/embed -o bin/rank -o bin/metrics \
	"${VARS[@]}" metrics >"$T/make.log" 2>&1 || { cat "$T/make.log" >&2; fail "the Makefile pipeline failed"; }
for f in train-queries.arrow valid-queries.arrow test-queries.arrow rocone/metrics.arrow rocone/metrics.md \
	rocone/mrr.png rocone/mrr-training.png; do
	cmp "$OUT/$f" "$T/slurm-out/$f" || fail "$f differs between the Slurm and the Makefile pipelines"
done
(cd "$OUT" && find . -type f | sort) >"$T/make-files"
(cd "$T/slurm-out" && find . -type f -not -path './logs/*' -not -path './slurm/*' -not -path './shards/*' | sort) >"$T/slurm-files"
diff "$T/make-files" "$T/slurm-files" >&2 || fail "the two pipelines wrote different sets of files"

# --- 7. the shards are the unsharded run ----------------------------------------------------------
step "3 rank shards per seed give the unsharded seeds' metrics"
whole=()
for s in 0 1; do
	d=$T/slurm-out/rocone/seed$s
	bin/rank -q --checkpoint "$d/model.arrow" --queries "$T/slurm-out/test-queries.arrow" -o "$T/whole-ranks$s.arrow" ||
		fail "unsharded rank of seed $s failed"
	whole+=("$T/whole-ranks$s.arrow")
done
bin/metrics --resamples 50 -o "$T/whole-metrics.arrow" "${whole[@]}" >"$T/whole-metrics.md" || fail "metrics of the unsharded ranks failed"
grep -q ' 2 seed(s): ' "$T/slurm-out/rocone/metrics.md" || fail "the sharded metrics do not count 2 seeds: $(head -1 "$T/slurm-out/rocone/metrics.md")"
cmp <(tail -n +2 "$T/whole-metrics.md") <(tail -n +2 "$T/slurm-out/rocone/metrics.md") ||
	fail "the metrics of 3 rank shards per seed differ from the unsharded ranks' metrics:"$'\n'"$(diff "$T/whole-metrics.md" "$T/slurm-out/rocone/metrics.md")"

ok=1
echo "test-slurm: PASS in $((SECONDS - t0)) s (cluster start, pipeline with 2 sample shards and 3 embed/rank shards, caching, failure, a time-limited training that requeues itself, Makefile comparison, shards = unsharded)" >&2
