#!/usr/bin/env bash
# Waits for jobs of pipelines/slurm/submit.sh to end and says how each task ended; exits 1
# if any did not complete, printing the tail of each failed task's log.
#
#   pipelines/slurm/submit.sh ... | tee jobs.txt
#   pipelines/slurm/wait.sh $(awk '{print $2}' jobs.txt)
#
# A task pending on a dependency that can never be met (an earlier stage failed, on a
# cluster that does not cancel such jobs) counts as ended and failed. States come from
# scontrol (jobs the controller still remembers, MinJobAge) or else from sacct.
# WAIT_TIMEOUT (seconds, default 0: none) bounds the wait; WAIT_POLL (default 2) the poll.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: $0 JOBID..." >&2; exit 2; }
TIMEOUT=${WAIT_TIMEOUT:-0}
POLL=${WAIT_POLL:-2}

# tasks: one line per task of the given jobs: ID NAME STATE REASON EXITCODE LOG
tasks() {
	local j out
	for j; do
		if out=$(scontrol show job -o "$j" 2>/dev/null) && [ -n "$out" ]; then
			echo "$out" | awk '{
				delete f
				for (i = 1; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v = $i; sub(/^[^=]*=/, "", v); f[k] = v }
				id = f["JobId"]
				if (f["ArrayTaskId"] != "" && f["ArrayTaskId"] != "(null)") id = f["ArrayJobId"] "_" f["ArrayTaskId"]
				# StdOut, a path, may hold spaces: its value runs to the next " Key=".
				stdout = f["StdOut"]
				if (match($0, / StdOut=/)) {
					stdout = substr($0, RSTART + 8)
					if (match(stdout, / [A-Za-z:]+=/)) stdout = substr(stdout, 1, RSTART - 1)
				}
				print id, f["JobName"], f["JobState"], f["Reason"], f["ExitCode"], stdout
			}'
		else
			sacct -n -X -P -j "$j" -o JobID,JobName,State,Reason,ExitCode 2>/dev/null |
				awk -F'|' '{ split($3, s, " "); print $1, $2, s[1], ($4 == "" ? "None" : $4), $5, "-" }'
		fi
	done
}

start=$SECONDS
while :; do
	list=$(tasks "$@")
	[ -n "$list" ] || { echo "slurm/wait: no job $* is known to scontrol or sacct" >&2; exit 1; }
	# Still to come: pending or running, except pending on a dependency that cannot be met.
	open=$(echo "$list" | awk '$3 ~ /^(PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|RESIZING|SUSPENDED)$/ && $4 != "DependencyNeverSatisfied"' | wc -l)
	[ "$open" -gt 0 ] || break
	if [ "$TIMEOUT" -gt 0 ] && [ $((SECONDS - start)) -ge "$TIMEOUT" ]; then
		echo "slurm/wait: $open task(s) still pending or running after ${TIMEOUT}s:" >&2
		echo "$list" | awk '{ printf "  %-12s %-16s %s (%s)\n", $1, $2, $3, $4 }' >&2
		exit 1
	fi
	sleep "$POLL"
done

echo "$list" | sort -t_ -k1,1n -k2,2n | awk '{ printf "  %-12s %-16s %-10s exit %s\n", $1, $2, $3 ($4 == "DependencyNeverSatisfied" ? " (dependency failed)" : ""), $5 }' >&2
bad=$(echo "$list" | awk '$3 != "COMPLETED"')
[ -n "$bad" ] || { echo "slurm/wait: all $(echo "$list" | wc -l) task(s) completed in $((SECONDS - start)) s" >&2; exit 0; }
echo "$bad" | while read -r id name state _ code log; do
	[ "$state" = FAILED ] || [ "$state" = TIMEOUT ] || [ "$state" = OUT_OF_MEMORY ] || [ "$state" = NODE_FAIL ] || continue
	echo "---- $id $name $state (exit $code): $log" >&2
	[ -f "$log" ] && tail -n 25 "$log" >&2
done
echo "slurm/wait: $(echo "$bad" | wc -l) task(s) did not complete" >&2
exit 1
