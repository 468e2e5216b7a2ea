#!/usr/bin/env bash
# Stops the cluster scripts/slurm/start.sh started in DIR: exactly the daemons whose pids it
# recorded in DIR/pids (slurmd, then slurmctld, then munged), SIGTERM and, for one still
# there after 10 s, SIGKILL; the cluster's own jobs are cancelled first. A pid that is gone, or that now belongs to another program
# (checked by its command name), is left alone. DIR itself (logs, config) is kept.
#
#   scripts/slurm/stop.sh DIR
set -uo pipefail

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
DIR=$1
PIDS=$DIR/pids
[ -f "$PIDS" ] || { echo "slurm/stop: no $PIDS: nothing started there" >&2; exit 0; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# ours NAME PID: the pid still runs the daemon NAME.
ours() { [ "$(cat "/proc/$2/comm" 2>/dev/null)" = "$1" ]; }

# First the jobs of this cluster (and only of it: the client talks to DIR's slurmctld), so
# no slurmstepd outlives its slurmd.
pid=$(awk '$1 == "slurmctld" { print $2 }' "$PIDS" | tail -1)
if [ -n "$pid" ] && ours slurmctld "$pid" && [ -f "$DIR/slurm.conf" ]; then
	export SLURM_CONF=$DIR/slurm.conf
	mapfile -t jobs < <(timeout 10 squeue -h -o %A 2>/dev/null | sort -u)
	if [ ${#jobs[@]} -gt 0 ]; then
		echo "slurm/stop: cancelling jobs ${jobs[*]}" >&2
		timeout 10 scancel "${jobs[@]}" 2>/dev/null
		for _ in $(seq 50); do [ -z "$(timeout 5 squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.2; done
	fi
fi

stopped=()
for name in slurmd slurmctld munged; do
	pid=$(awk -v n="$name" '$1 == n { print $2 }' "$PIDS" | tail -1)
	[ -n "$pid" ] || continue
	ours "$name" "$pid" || continue
	$SUDO kill -TERM "$pid" 2>/dev/null || continue
	for _ in $(seq 100); do ours "$name" "$pid" || break; sleep 0.1; done
	if ours "$name" "$pid"; then
		echo "slurm/stop: $name (pid $pid) still runs after 10 s: SIGKILL" >&2
		$SUDO kill -KILL "$pid" 2>/dev/null
		for _ in $(seq 20); do ours "$name" "$pid" || break; sleep 0.1; done
	fi
	stopped+=("$name:$pid")
done
rm -f "$PIDS" 2>/dev/null || $SUDO rm -f "$PIDS"
echo "slurm/stop: stopped ${stopped[*]:-nothing (none still ran)}" >&2
