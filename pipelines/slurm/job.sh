#!/usr/bin/env bash
# One task of a stage submitted by pipelines/slurm/submit.sh: runs line
# SLURM_ARRAY_TASK_ID+1 ("TARGET<TAB>COMMAND") of TASKFILE from the repository root.
#
#   sbatch ... pipelines/slurm/job.sh OUT/slurm/SUBMISSION/STAGE.tasks
#
# Make's .DELETE_ON_ERROR, kept on Slurm: when the command fails (or the job is cancelled or
# hits its time limit: Slurm's SIGTERM reaches the stage binary, which stops cleanly, and
# this script), a TARGET that the command changed is moved to TARGET.failed-JOBID_TASK, so
# the DAG sees it missing and never takes a half-done artifact for a finished one. (train
# keeps an unfinished run in its --partial checkpoint, not in TARGET: that one stays, and
# the task run again continues it.)
#
# Before the time limit: a job submitted with --signal=B:USR1@N (submit.sh does for train)
# gets SIGUSR1 here N seconds before its limit. This script then sends SIGTERM to the
# command (train checkpoints at its next step and exits), and when the command has not
# finished, requeues the task (scontrol requeue) so that it runs again and continues from
# its checkpoint, while the jobs that wait for it (afterok) go on waiting; at most
# ROCONE_MAX_REQUEUES times (default 20) per task.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 TASKFILE" >&2; exit 2; }
TASKFILE=$1
TASK=${SLURM_ARRAY_TASK_ID:-0}
line=$(sed -n "$((TASK + 1))p" "$TASKFILE")
[ -n "$line" ] || { echo "slurm/job: $TASKFILE has no line for task $TASK" >&2; exit 2; }
target=${line%%$'\t'*}
cmd=${line#*$'\t'}
id=${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-local}}${SLURM_ARRAY_TASK_ID:+_$SLURM_ARRAY_TASK_ID}

mtime() { stat -c %y "$1" 2>/dev/null || echo none; }
echo "== job $id (${SLURM_JOB_NAME:-not under Slurm}) on $(hostname) in $PWD, $(date -Is)"
echo "== $target"
echo "== $cmd"
mkdir -p "$(dirname "$target")"
before=$(mtime "$target")
start=$SECONDS

# The signal goes to the whole job (the stage binary too); this shell only waits for the
# command to finish, then cleans up.
trap 'echo "== job $id: signalled, waiting for the command to stop"' TERM INT
# SIGUSR1 (--signal=B:USR1@N) comes to this shell alone: pass it on as SIGTERM, to the
# command (bash -c runs a simple command in its own place) and to anything it started.
requeue=0
child=""
near_limit() {
	requeue=1
	echo "== job $id: the time limit is near (SIGUSR1), $(date -Is): stopping the command with SIGTERM"
	[ -z "$child" ] && return
	kill -TERM "$child" 2>/dev/null
	! command -v pkill >/dev/null 2>&1 || pkill -TERM -P "$child" 2>/dev/null
}
trap near_limit USR1
bash -c "$cmd" &
child=$!
[ $requeue -eq 0 ] || near_limit
wait "$child"
rc=$?
while kill -0 "$child" 2>/dev/null; do
	wait "$child"
	rc=$?
done

if [ $rc -ne 0 ] && [ $requeue -eq 1 ] && [ -n "${SLURM_JOB_ID:-}" ]; then
	n=${SLURM_RESTART_COUNT:-0} max=${ROCONE_MAX_REQUEUES:-20}
	ref=$SLURM_JOB_ID
	[ -z "${SLURM_ARRAY_JOB_ID:-}" ] || ref=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}
	if [ "$n" -ge "$max" ]; then
		echo "== job $id: not requeued: it ran $((n + 1)) times already (ROCONE_MAX_REQUEUES=$max)"
	elif scontrol requeue "$ref"; then
		echo "== job $id: requeued after $((SECONDS - start)) s (exit $rc; run $((n + 2)) of at most $((max + 1))): it continues from its checkpoint"
		exit 0
	else
		echo "== job $id: scontrol requeue $ref failed"
	fi
fi
if [ $rc -ne 0 ]; then
	if [ -e "$target" ] && [ "$(mtime "$target")" != "$before" ]; then
		mv -f "$target" "$target.failed-$id"
		echo "== job $id: moved the changed $target to $target.failed-$id"
	fi
	echo "== job $id: FAILED (exit $rc) after $((SECONDS - start)) s"
	exit $rc
fi
[ -e "$target" ] || { echo "== job $id: FAILED: the command succeeded but wrote no $target"; exit 1; }
echo "== job $id: done in $((SECONDS - start)) s, $(date -Is)"
