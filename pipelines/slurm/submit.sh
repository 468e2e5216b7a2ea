#!/usr/bin/env bash
# The pipeline of pipelines/Makefile as Slurm jobs, run from the repository root on a login
# node whose checkout and OUT are on the cluster's shared filesystem:
#
#   pipelines/slurm/submit.sh [-n] [VAR=VALUE ...]
#   pipelines/slurm/submit.sh DATASET=fb15k-237 SEEDS="0 1 2" DEVICE=cuda PARTITION=gpu TIME_TRAIN=2-00:00:00
#
# The DAG, its artifact paths and its commands are the Makefile's, so a run here and one of
# `make -f pipelines/Makefile` with the same variables write the same files:
#
#   sample  (array over the splits: 0 train, 1 valid, 2 test)   $(OUT)/{train,valid,test}-queries.arrow
#     [SAMPLE_SHARDS=n > 1: sample is an array over splits × n  $(OUT)/shards/<split>-queries-<i>-of-<n>.arrow
#      └► merge (array over the splits)                         $(OUT)/{train,valid,test}-queries.arrow]
#     └► train (array over SEEDS, by position)                  $(RUN)/seed$(S)/model.arrow, train-log.arrow
#          └► embed (array over SEEDS × SHARDS)                 $(RUN)/seed$(S)/cones.arrow
#               └► rank (array over SEEDS × SHARDS)             $(RUN)/seed$(S)/ranks.arrow
#                    └► metrics (one job)                       $(RUN)/metrics.arrow, metrics.md, mrr.png
#
# where RUN is $(OUT)/$(MODEL)[-$(PRESET)]. Jobs are tied with --dependency=afterok (and
# --kill-on-invalid-dep=yes: a job whose input failed is cancelled, not left pending).
#
# Caching is Make's timestamp rule, applied here before anything is submitted: an artifact is
# rebuilt when it is missing, when one of its inputs is newer than it, or when one of its
# inputs is being rebuilt; an up-to-date artifact's job is not submitted, and its dependents
# depend on nothing for it. A second submit after a finished run submits nothing; touching
# the train queries resubmits train, embed, rank (every seed) and metrics; deleting one
# seed's ranks resubmits that seed's rank alone, then metrics. An array holds only the
# stale tasks (e.g. --array=1 when only seed 1's model is missing).
#
# Sharding: SHARDS=n > 1 (as in the Makefile) cuts embed and rank of every seed into n
# shards (`--shard i/n`): their arrays become seeds × shards, task k = seed position × n +
# shard i, writing seed$(S)/cones-<i>-of-<n>.arrow and seed$(S)/ranks-<i>-of-<n>.arrow (rank
# shard i reads cones shard i), and metrics takes all the ranks shards, the n of a seed as
# one run. SAMPLE_SHARDS=n > 1 (as in the Makefile) samples each split in n shards
# (`sample generate --shard i/n`, the split's flags otherwise unchanged): the sample array
# becomes splits × shards, task k = split index × n + shard i (0 train, 1 valid, 2 test),
# writing shards/<split>-queries-<i>-of-<n>.arrow, and a merge array over the three splits
# (afterok on sample; task = split index) joins each split's n shards with `sample merge`
# into <split>-queries.arrow, byte for byte the unsharded file; train, embed and rank wait
# for merge as they would for sample. A shard does about 1/n of the work plus a margin
# (--shard-margin, docs/cluster.md), so it pays for large splits; when merge says a shard
# stopped short, add the --shard-margin it names to the split's flags and delete the shards
# it names. The shard files are kept, and cached like any artifact (a missing shard
# resamples that shard alone, then merges its split).
#
# Output: one line per submitted job on stdout, "STAGE JOBID ARRAY" (ARRAY is "-" for a
# single job); nothing when every artifact is up to date. -n prints the sbatch commands and
# the tasks instead of submitting them. Each job logs to $(OUT)/logs/STAGE-JOBID_TASK.log
# (STAGE-JOBID.log for metrics); the exact commands of a submission are kept in
# $(OUT)/slurm/SUBMISSION/STAGE.tasks (line k+1 is array task k). Check with
#   squeue -u $USER; sacct -j JOBID --format=JobID,JobName,State,ExitCode,Elapsed,MaxRSS
# and the job's log. A failed job keeps nothing in the artifact's place: an artifact it
# changed before failing is moved to ARTIFACT.failed-JOBID_TASK.
#
# Time limits: train runs as the Makefile's (`--partial seed$(S)/model.partial.arrow
# --auto-resume`): its checkpoints go to model.partial.arrow until it is finished, and
# model.arrow appears only then. TRAIN_GRACE seconds before the train job's time limit
# Slurm signals its job script (--signal=B:USR1@TRAIN_GRACE), which has train checkpoint
# (SIGTERM) and requeues the task (scontrol requeue; --requeue, its log appended): the
# task runs again, continues the partial checkpoint, and the jobs after it wait for it as
# before (afterok), so the DAG completes by itself. A train job that ends any other way
# (cancelled, killed at the limit, failed) keeps its partial checkpoint, and the next
# submit of the same variables continues it.
#
# Variables (environment, or VAR=VALUE arguments; defaults as in pipelines/Makefile):
#   DATASET DATA OUT MODEL PRESET SEEDS SAMPLE_SEED TRAIN_QUERY_FLAGS VALID_FLAGS TEST_FLAGS
#   TRAIN_FLAGS DEVICE METRICS_FLAGS   the Makefile's
#   BIN          the stage binaries (default bin, with DEVICE=cuda bin/cuda); built here
#                before submitting (make bin/STAGE, or make build-cuda), unless BUILD=0
#   PARTITION ACCOUNT QOS              --partition, --account, --qos of every job (empty: the
#                                      cluster's default)
#   GPU_PARTITION CPU_PARTITION        the partition of the GPU stages (train, embed, rank with
#                                      DEVICE=cuda) and of the others (sample, merge, metrics,
#                                      and every stage with DEVICE=cpu); default PARTITION
#   PARTITION_<STAGE>                  one stage's partition (SAMPLE MERGE TRAIN EMBED RANK
#                                      METRICS), over the two above
#   TIME_<STAGE> MEM_<STAGE> CPUS_<STAGE>   per stage (SAMPLE MERGE TRAIN EMBED RANK METRICS):
#                --time, --mem and --cpus-per-task; empty leaves the cluster's default
#   SHARDS       embed and rank each seed in this many shards (default 1: unsharded)
#   SAMPLE_SHARDS  sample each split in this many shards, then merge them (default 1:
#                each split sampled in one job, no merge stage)
#   GPU_GRES     the GPU request of train, embed and rank when DEVICE=cuda (default gpu:1)
#   TRAIN_GRACE  seconds before the train job's time limit at which it checkpoints and
#                requeues itself (default 300; Slurm may signal up to a minute early); 0:
#                never (a train job at its limit then ends, and a later submit continues it)
#   MAX_REQUEUES how many times a train task requeues itself at most (default 20)
#   SBATCH_FLAGS extra sbatch flags for every job (e.g. --constraint=avx512)
set -euo pipefail

die() { echo "slurm/submit: $*" >&2; exit 1; }

DRY=0
for arg; do
	case $arg in
	-n | --dry-run) DRY=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	[A-Za-z_]*=*) export "${arg%%=*}=${arg#*=}" ;;
	*) die "unknown argument '$arg' (give VAR=VALUE or -n)" ;;
	esac
done

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"

DATASET=${DATASET:-fb15k-237}
DATA=${DATA:-data/$DATASET}
OUT=${OUT:-out/$DATASET}
MODEL=${MODEL:-rocone}
PRESET=${PRESET:-}
SEEDS=${SEEDS:-0}
SAMPLE_SEED=${SAMPLE_SEED:-0}
TRAIN_QUERY_FLAGS=${TRAIN_QUERY_FLAGS:-}
VALID_FLAGS=${VALID_FLAGS:-}
TEST_FLAGS=${TEST_FLAGS:-}
TRAIN_FLAGS=${TRAIN_FLAGS:-}
DEVICE=${DEVICE:-cpu}
METRICS_FLAGS=${METRICS_FLAGS---compare}
SHARDS=${SHARDS:-1}
SAMPLE_SHARDS=${SAMPLE_SHARDS:-1}
if [ "$DEVICE" = cuda ]; then BIN=${BIN:-bin/cuda}; else BIN=${BIN:-bin}; fi
BUILD=${BUILD:-1}
PARTITION=${PARTITION:-}
GPU_PARTITION=${GPU_PARTITION:-$PARTITION}
CPU_PARTITION=${CPU_PARTITION:-$PARTITION}
TRAIN_GRACE=${TRAIN_GRACE:-300}
MAX_REQUEUES=${MAX_REQUEUES:-20}
ACCOUNT=${ACCOUNT:-}
QOS=${QOS:-}
GPU_GRES=${GPU_GRES:-gpu:1}
SBATCH_FLAGS=${SBATCH_FLAGS:-}
# Defaults sized for FB15k-237 at the paper's settings (README: sampling peaks under
# 200 MiB, training at d=800 under 2 GiB, NELL-995 under 3 GiB); raise them for larger graphs.
TIME_SAMPLE=${TIME_SAMPLE-1:00:00};   MEM_SAMPLE=${MEM_SAMPLE-4G};   CPUS_SAMPLE=${CPUS_SAMPLE-4}
TIME_MERGE=${TIME_MERGE-1:00:00};     MEM_MERGE=${MEM_MERGE-4G};     CPUS_MERGE=${CPUS_MERGE-1}
TIME_TRAIN=${TIME_TRAIN-2-00:00:00};  MEM_TRAIN=${MEM_TRAIN-8G};     CPUS_TRAIN=${CPUS_TRAIN-8}
TIME_EMBED=${TIME_EMBED-1:00:00};     MEM_EMBED=${MEM_EMBED-4G};     CPUS_EMBED=${CPUS_EMBED-4}
TIME_RANK=${TIME_RANK-2:00:00};       MEM_RANK=${MEM_RANK-4G};       CPUS_RANK=${CPUS_RANK-8}
TIME_METRICS=${TIME_METRICS-0:30:00}; MEM_METRICS=${MEM_METRICS-2G}; CPUS_METRICS=${CPUS_METRICS-1}

# --- checks --------------------------------------------------------------------------------
for v in DATASET DATA OUT MODEL PRESET SEEDS SAMPLE_SEED TRAIN_QUERY_FLAGS VALID_FLAGS TEST_FLAGS \
	TRAIN_FLAGS DEVICE METRICS_FLAGS BIN SBATCH_FLAGS; do
	case ${!v} in *$'\n'* | *$'\t'*) die "$v holds a newline or a tab" ;; esac
done
[ -d "$DATA" ] || die "DATA=$DATA: no such dataset folder"
# The queries' prerequisites, the Makefile's DATA_FILES: the files the dataset loader reads
# and the KG digest covers.
DATA_FILES=()
for data_file in "$DATA"/{train,valid,test,entities,relations}.{tsv,tsv.gz,txt,txt.gz}; do
	[ ! -e "$data_file" ] || DATA_FILES+=("$data_file")
done
read -r -a SEED_LIST <<<"$SEEDS"
[ ${#SEED_LIST[@]} -gt 0 ] || die "SEEDS is empty"
declare -A seen=()
for s in "${SEED_LIST[@]}"; do
	[[ $s =~ ^[0-9]+$ ]] || die "SEEDS: '$s' is not a non-negative integer"
	[ -z "${seen[$s]:-}" ] || die "SEEDS: $s is given twice"
	seen[$s]=1
done
case $DEVICE in cpu | cuda) ;; *) die "DEVICE=$DEVICE: cpu or cuda" ;; esac
[[ $SHARDS =~ ^[1-9][0-9]*$ ]] || die "SHARDS=$SHARDS: want a positive number of shards (1: unsharded)"
[[ $SAMPLE_SHARDS =~ ^[1-9][0-9]*$ ]] || die "SAMPLE_SHARDS=$SAMPLE_SHARDS: want a positive number of sample shards (1: unsharded)"
[[ $TRAIN_GRACE =~ ^[0-9]+$ ]] || die "TRAIN_GRACE=$TRAIN_GRACE: want the seconds before the time limit at which train checkpoints and requeues (0: never)"
[[ $MAX_REQUEUES =~ ^[0-9]+$ ]] || die "MAX_REQUEUES=$MAX_REQUEUES: want a number of requeues"
for v in GPU_PARTITION CPU_PARTITION PARTITION_SAMPLE PARTITION_MERGE PARTITION_TRAIN PARTITION_EMBED PARTITION_RANK PARTITION_METRICS; do
	case ${!v:-} in *[[:space:]]*) die "$v='${!v}' holds a space" ;; esac
done
[ $DRY -eq 1 ] || command -v sbatch >/dev/null 2>&1 || die "sbatch not found: run this on a Slurm login node"

# --- binaries ------------------------------------------------------------------------------
# The stages in submission order; merge (only with SAMPLE_SHARDS > 1) runs bin/sample.
STAGES=(sample merge train embed rank metrics)
BINARIES=(sample train embed rank metrics)
if [ "$BUILD" = 1 ] && [ $DRY -eq 0 ]; then
	if [ "$BIN" = bin ]; then
		make --no-print-directory -s "${BINARIES[@]/#/bin/}" >&2 || die "building the stage binaries failed"
	elif [ "$BIN" = bin/cuda ]; then
		make --no-print-directory -s build-cuda >&2 || die "building the CUDA stage binaries failed"
	else
		die "BIN=$BIN is not built here: give BUILD=0 with binaries already there"
	fi
fi
for s in "${BINARIES[@]}"; do
	[ $DRY -eq 1 ] || [ -x "$BIN/$s" ] || die "$BIN/$s is missing or not executable"
done

# --- the DAG with Make's timestamp rule -------------------------------------------------------
q() { printf '%q' "$1"; }
RUN=$OUT/$MODEL${PRESET:+-$PRESET}
declare -A REMAKE=() # artifact -> the stage that rebuilds it in this submission

declare -A CHANGED=() # a flags stamp whose flags changed, in a dry run (which writes none)

# flags_stamp FILE FLAGS: the Makefile's stamp of a stage's flags (under .flags/), a
# prerequisite of what the stage makes: FILE is written where FLAGS differ from what it
# holds (a new one dated 1970, so that an existing run is not redone for it); a dry run
# writes none and marks a changed one in CHANGED. Sets STAMP to FILE, or to nothing for a
# dry run's missing one.
flags_stamp() {
	local file=$1 flags=$2
	STAMP=$file
	if [ -e "$file" ] && [ "$(cat "$file")" = "$flags" ]; then
		return
	fi
	if [ $DRY -eq 1 ]; then
		if [ -e "$file" ]; then CHANGED[$file]=1; else STAMP=""; fi
		return
	fi
	mkdir -p "$(dirname "$file")"
	if [ -e "$file" ]; then
		printf '%s\n' "$flags" >"$file"
	else
		printf '%s\n' "$flags" >"$file" && touch -d @0 "$file"
	fi
}

# stale TARGET PREREQ...: Make's rule: TARGET is missing, a prerequisite is newer (mtime,
# to the nanosecond), or a prerequisite is rebuilt in this submission (or is a flags stamp
# that a dry run found changed).
stale() {
	local target=$1 p
	shift
	[ -e "$target" ] || return 0
	for p; do
		[ -z "${CHANGED[$p]:-}" ] || return 0
		[ -z "${REMAKE[$p]:-}" ] || return 0
		[ -e "$p" ] || die "$p, an input of $target, is missing and nothing here makes it"
		[ ! "$p" -nt "$target" ] || return 0
	done
	return 1
}

# Per stage: TASKS[stage] holds one "TARGET<TAB>COMMAND" line per array task (all of them,
# stale or not, so a task's index is stable: the split's or the seed's position), INDEX[stage]
# the stale tasks' indices, DEPS[stage] the stages whose jobs it waits for.
declare -A TASKS=() INDEX=() DEPS=()
add_task() { # stage index target command prereq...
	local stage=$1 i=$2 target=$3 cmd=$4 p
	shift 4
	TASKS[$stage]+="$target"$'\t'"$cmd"$'\n'
	if stale "$target" "$@"; then
		INDEX[$stage]+="${INDEX[$stage]:+,}$i"
		REMAKE[$target]=$stage
		for p; do
			[ -z "${REMAKE[$p]:-}" ] || case " ${DEPS[$stage]:-} " in *" ${REMAKE[$p]} "*) ;; *) DEPS[$stage]+=" ${REMAKE[$p]}" ;; esac
		done
	fi
}

SPLITS=(train valid test)
SPLIT_FLAGS=("$TRAIN_QUERY_FLAGS" "$VALID_FLAGS" "$TEST_FLAGS")
# As the Makefile: stamps of DATA (another folder of older files) and of SEEDS (a seed
# dropped), which the timestamps cannot see.
flags_stamp "$OUT/.flags/data" "$DATA"
DATA_STAMP=$STAMP
flags_stamp "$RUN/.flags/seeds" "${SEED_LIST[*]}"
SEEDS_STAMP=$STAMP
for i in 0 1 2; do
	t=$OUT/${SPLITS[$i]}-queries.arrow
	gen="$(q "$BIN/sample") generate --data $(q "$DATA") --split ${SPLITS[$i]} --seed $(q "$SAMPLE_SEED") ${SPLIT_FLAGS[$i]}"
	flags_stamp "$OUT/.flags/${SPLITS[$i]}-queries" "--seed $SAMPLE_SEED ${SPLIT_FLAGS[$i]}"
	if [ "$SAMPLE_SHARDS" = 1 ]; then
		add_task sample $i "$t" "$gen -o $(q "$t")" "${DATA_FILES[@]}" ${STAMP:+"$STAMP"} ${DATA_STAMP:+"$DATA_STAMP"}
		continue
	fi
	parts=()
	for ((k = 0; k < SAMPLE_SHARDS; k++)); do
		p=$OUT/shards/${SPLITS[$i]}-queries-$k-of-$SAMPLE_SHARDS.arrow
		parts+=("$p")
		add_task sample $((i * SAMPLE_SHARDS + k)) "$p" "$gen --shard $k/$SAMPLE_SHARDS -o $(q "$p")" "${DATA_FILES[@]}" ${STAMP:+"$STAMP"} ${DATA_STAMP:+"$DATA_STAMP"}
	done
	parts_q=""
	for p in "${parts[@]}"; do parts_q+=" $(q "$p")"; done
	add_task merge $i "$t" "$(q "$BIN/sample") merge -q -o $(q "$t")$parts_q" "${parts[@]}"
done
TQ=$OUT/train-queries.arrow VQ=$OUT/valid-queries.arrow XQ=$OUT/test-queries.arrow
flags_stamp "$RUN/.flags/train" "$TRAIN_FLAGS"
TRAIN_STAMP=$STAMP
for i in "${!SEED_LIST[@]}"; do
	s=${SEED_LIST[$i]} d=$RUN/seed${SEED_LIST[$i]}
	add_task train "$i" "$d/model.arrow" "$(q "$BIN/train") --train $(q "$TQ") --valid $(q "$VQ") --model $(q "$MODEL")${PRESET:+ --preset $(q "$PRESET")} --seed $s --device $DEVICE $TRAIN_FLAGS --auto-resume --overwrite --partial $(q "$d/model.partial.arrow") --checkpoint $(q "$d/model.arrow") --log $(q "$d/train-log.arrow")" \
		"$TQ" "$VQ" ${TRAIN_STAMP:+"$TRAIN_STAMP"}
done
# shard K: the file-name suffix and the flag of shard K of SHARDS (none when unsharded).
shard() {
	if [ "$SHARDS" = 1 ]; then sfx="" flag=""; else sfx="-$1-of-$SHARDS" flag=" --shard $1/$SHARDS"; fi
}
for i in "${!SEED_LIST[@]}"; do
	d=$RUN/seed${SEED_LIST[$i]}
	for ((k = 0; k < SHARDS; k++)); do
		shard $k
		add_task embed $((i * SHARDS + k)) "$d/cones$sfx.arrow" "$(q "$BIN/embed") --checkpoint $(q "$d/model.arrow") --queries $(q "$XQ") --device $DEVICE$flag -o $(q "$d/cones$sfx.arrow")" \
			"$d/model.arrow" "$XQ"
	done
done
RANKS=()
for i in "${!SEED_LIST[@]}"; do
	d=$RUN/seed${SEED_LIST[$i]}
	for ((k = 0; k < SHARDS; k++)); do
		shard $k
		RANKS+=("$d/ranks$sfx.arrow")
		add_task rank $((i * SHARDS + k)) "$d/ranks$sfx.arrow" "$(q "$BIN/rank") --checkpoint $(q "$d/model.arrow") --queries $(q "$XQ") --cones $(q "$d/cones$sfx.arrow") --device $DEVICE$flag -o $(q "$d/ranks$sfx.arrow")" \
			"$d/cones$sfx.arrow" "$d/model.arrow" "$XQ"
	done
done
ranks_q=""
for r in "${RANKS[@]}"; do ranks_q+=" $(q "$r")"; done
flags_stamp "$RUN/.flags/metrics" "$METRICS_FLAGS"
# As pipelines/Makefile: runs on one OUT take turns at the table (flock on .metrics.lock).
add_task metrics 0 "$RUN/metrics.arrow" "exec 9>$(q "$RUN/.metrics.lock") && flock 9 && $(q "$BIN/metrics") $METRICS_FLAGS --plot $(q "$RUN/mrr.png") --log $(q "$RUN/seed${SEED_LIST[0]}/train-log.arrow") -o $(q "$RUN/metrics.arrow")$ranks_q > $(q "$RUN/metrics.md.tmp") && mv $(q "$RUN/metrics.md.tmp") $(q "$RUN/metrics.md")" \
	"${RANKS[@]}" ${STAMP:+"$STAMP"} ${SEEDS_STAMP:+"$SEEDS_STAMP"}

# --- submit ----------------------------------------------------------------------------------
submitted=0
for s in "${STAGES[@]}"; do [ -z "${INDEX[$s]:-}" ] || submitted=1; done
if [ $submitted -eq 0 ]; then
	echo "slurm/submit: every artifact under $OUT is up to date: nothing to submit" >&2
	exit 0
fi

OUT_ABS=$(realpath -m "$OUT")
if [ $DRY -eq 0 ]; then
	# An earlier submission into the same OUT still queued or running would race this one.
	busy=$(squeue -h -u "$(id -un)" -o '%A|%k' 2>/dev/null | awk -F'|' -v o="$OUT_ABS" '$2 == o { print $1 }' | sort -u | tr '\n' ' ')
	[ -z "$busy" ] || die "jobs $busy of an earlier submission into $OUT are still queued or running: wait for them (or scancel them) first"
fi

SUB=$OUT/slurm/$(date +%Y%m%d-%H%M%S)-$$
[ $DRY -eq 1 ] || mkdir -p "$SUB" "$OUT/logs"
common=(--parsable --chdir="$ROOT" --comment="$OUT_ABS" --kill-on-invalid-dep=yes)
[ -z "$ACCOUNT" ] || common+=(--account="$ACCOUNT")
[ -z "$QOS" ] || common+=(--qos="$QOS")
read -r -a extra <<<"$SBATCH_FLAGS"
common+=("${extra[@]}")

declare -A JOB=()
jobs=()
cancel_submitted() { [ ${#jobs[@]} -eq 0 ] || scancel "${jobs[@]}" 2>/dev/null || true; }
for s in "${STAGES[@]}"; do
	[ -n "${INDEX[$s]:-}" ] || continue
	[ $DRY -eq 1 ] || printf '%s' "${TASKS[$s]}" >"$SUB/$s.tasks"
	U=${s^^}
	time_v=TIME_$U mem_v=MEM_$U cpus_v=CPUS_$U
	args=("${common[@]}" --job-name="rocone-$s")
	[ -z "${!time_v}" ] || args+=(--time="${!time_v}")
	[ -z "${!mem_v}" ] || args+=(--mem="${!mem_v}")
	[ -z "${!cpus_v}" ] || args+=(--cpus-per-task="${!cpus_v}")
	part_v=PARTITION_$U
	part=${!part_v:-}
	case $s in
	train | embed | rank) if [ "$DEVICE" = cuda ]; then args+=(--gres="$GPU_GRES"); part=${part:-$GPU_PARTITION}; fi ;;
	esac
	part=${part:-$CPU_PARTITION}
	[ -z "$part" ] || args+=(--partition="$part")
	if [ "$s" = train ] && [ "$TRAIN_GRACE" -gt 0 ]; then
		# Checkpoint and requeue before the time limit (job.sh); the requeued task's log
		# goes on in the same file.
		# shellcheck disable=SC2054 # the comma is --export's own list separator, inside one argument
		args+=(--signal=B:USR1@"$TRAIN_GRACE" --requeue --open-mode=append --export=ALL,ROCONE_MAX_REQUEUES="$MAX_REQUEUES")
	fi
	if [ "$s" = metrics ]; then
		args+=(--output="$OUT/logs/$s-%j.log")
		array=-
	else
		args+=(--array="${INDEX[$s]}" --output="$OUT/logs/$s-%A_%a.log")
		array=${INDEX[$s]}
	fi
	dep=""
	for d in ${DEPS[$s]:-}; do dep+=":${JOB[$d]}"; done
	[ -z "$dep" ] || args+=(--dependency="afterok$dep")
	cmd=(sbatch "${args[@]}" pipelines/slurm/job.sh "$SUB/$s.tasks")
	if [ $DRY -eq 1 ]; then
		JOB[$s]="<$s>"
		printf '%q ' "${cmd[@]}"
		echo
		i=0
		while IFS=$'\t' read -r target line; do
			case ,${INDEX[$s]}, in *,$i,*) echo "  task $i: $line" ;; esac
			i=$((i + 1))
		done <<<"${TASKS[$s]%$'\n'}"
		continue
	fi
	if ! id=$("${cmd[@]}"); then
		cancel_submitted
		die "sbatch of $s failed; cancelled this submission's jobs ${jobs[*]}"
	fi
	id=${id%%;*}
	JOB[$s]=$id
	jobs+=("$id")
	echo "$s $id $array"
done
[ $DRY -eq 1 ] || echo "slurm/submit: submitted ${jobs[*]}; logs in $OUT/logs, commands in $SUB" >&2
