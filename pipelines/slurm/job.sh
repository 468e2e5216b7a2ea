#!/usr/bin/env bash
# One task of a stage submitted by pipelines/slurm/submit.sh: runs line
# SLURM_ARRAY_TASK_ID+1 ("TARGET<TAB>COMMAND") of TASKFILE from the repository root.
#
#   sbatch ... pipelines/slurm/job.sh OUT/slurm/SUBMISSION/STAGE.tasks
#
# Make's .DELETE_ON_ERROR, kept on Slurm: when the command fails (or the job is cancelled or
# hits its time limit: Slurm's SIGTERM reaches the stage binary, which stops cleanly, and
# this script), a TARGET that the command changed is moved to TARGET.failed-JOBID_TASK, so
# the DAG sees it missing and never takes a half-done artifact (e.g. a checkpoint of an
# interrupted training) for a finished one; `train --resume` can continue that file.
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
echo "== job $id ($SLURM_JOB_NAME) on $(hostname) in $PWD, $(date -Is)"
echo "== $target"
echo "== $cmd"
mkdir -p "$(dirname "$target")"
before=$(mtime "$target")
start=$SECONDS

# The signal goes to the whole job (the stage binary too); this shell only waits for the
# command to finish, then cleans up.
trap 'echo "== job $id: signalled, waiting for the command to stop"' TERM INT
bash -c "$cmd" &
child=$!
wait "$child"
rc=$?
while kill -0 "$child" 2>/dev/null; do
	wait "$child"
	rc=$?
done

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
