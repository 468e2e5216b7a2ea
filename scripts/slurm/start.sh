#!/usr/bin/env bash
# A private single-node Slurm cluster for the tests: installs Debian's slurm-wlm and munge
# when missing, writes a config into DIR, starts munged, slurmctld and slurmd on this host
# (as root) and waits until the node is idle.
#
#   scripts/slurm/start.sh DIR        # then: export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm/stop.sh DIR         # kills exactly the daemons started here
#
# Everything the cluster owns lives in DIR: slurm.conf, its own munge key and socket (so a
# system munged, or /run/munge, is never touched), state and spool folders, the daemons'
# logs and pid files (DIR/pids holds "name pid" per daemon, for stop.sh). Ports are picked
# free from 6817 up, so a leftover cluster of an earlier run (or another user's) does not
# clash with this one. Jobs run as root with ProctrackType=proctrack/linuxproc and
# TaskPlugin=task/none: no cgroups are needed, which is what a container or CI box has.
#
# Environment: SLURM_START_TIMEOUT (seconds to wait for an idle node, default 60).
set -euo pipefail

die() { echo "slurm/start: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: $0 DIR"
DIR=$1
TIMEOUT=${SLURM_START_TIMEOUT:-60}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || die "needs root (or sudo) to install and run the daemons as root"
	SUDO="sudo"
fi

# --- install ---------------------------------------------------------------------------
need=()
for bin in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge; do
	command -v "${bin%%:*}" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin command -v "${bin%%:*}" >/dev/null 2>&1 || need+=("${bin##*:}")
done
export PATH=$PATH:/usr/sbin:/sbin
MARK="# written by rocone scripts/slurm/start.sh while installing"
if [ -f /usr/sbin/policy-rc.d ] && grep -qF "$MARK" /usr/sbin/policy-rc.d; then
	$SUDO rm -f /usr/sbin/policy-rc.d # left by an install of ours that was killed
fi
if [ ${#need[@]} -gt 0 ]; then
	echo "slurm/start: installing ${need[*]} (apt-get)" >&2
	# Keep the packages' maintainer scripts from starting the system's own munge and slurm
	# services (this cluster runs its own): a policy-rc.d that refuses, only while we install
	# and only if the machine has none.
	policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\n%s\nexit 101\n' "$MARK" | $SUDO tee $policy >/dev/null
		$SUDO chmod 755 $policy
	fi
	rc=0
	{ $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q &&
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${need[@]}"; } >&2 || rc=$?
	[ -z "$policy" ] || $SUDO rm -f "$policy"
	[ $rc -eq 0 ] || die "apt-get install ${need[*]} failed (exit $rc)"
	for bin in slurmctld slurmd sbatch sinfo munged mungekey; do
		command -v $bin >/dev/null 2>&1 || die "$bin is still missing after installing ${need[*]}"
	done
fi

# --- the folder ------------------------------------------------------------------------
if [ -e "$DIR/pids" ]; then
	# A cluster started here before: stop what of it still runs, then start afresh.
	"$(dirname "$0")/stop.sh" "$DIR" || die "could not stop the cluster left in $DIR"
fi
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
$SUDO rm -rf "$DIR/state" "$DIR/spool" "$DIR/munge" "$DIR"/*.log "$DIR/pids"
mkdir -p "$DIR/state" "$DIR/spool" "$DIR/munge"
# munged refuses a socket folder that others can write to or that another user owns; root
# runs it here, so root owns it, mode 0755 (clients of any user reach the socket).
$SUDO chown root:root "$DIR/munge" || die "could not make root the owner of $DIR/munge (munged refuses its socket folder otherwise)"
$SUDO chmod 0755 "$DIR/munge" || die "could not set $DIR/munge to mode 0755"

# --- munge ---------------------------------------------------------------------------------
# A key of our own (munge needs the same key on every node; here there is one node).
if command -v mungekey >/dev/null 2>&1; then
	$SUDO mungekey --create --keyfile="$DIR/munge/munge.key" >/dev/null
else
	$SUDO dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
fi
$SUDO chmod 0400 "$DIR/munge/munge.key"
SOCKET=$DIR/munge/munge.socket

# Starts one daemon in the foreground of its own session, its output to DIR/NAME.log, and
# records its pid in DIR/pids: the shell that records $$ execs the daemon, which does not
# fork (-D, --foreground), so the pid is the daemon's own and stop.sh kills exactly it.
start_daemon() {
	local name=$1; shift
	# shellcheck disable=SC2016 # the single-quoted script is sh -c's: $1, $2, $$ and $@ are that shell's
	$SUDO setsid sh -c 'n=$1 d=$2; shift 2; echo "$n $$" >>"$d/pids"; exec "$@"' sh "$name" "$DIR" "$@" \
		</dev/null >>"$DIR/$name.log" 2>&1 &
	for _ in $(seq 50); do grep -q "^$name " "$DIR/pids" 2>/dev/null && return; sleep 0.1; done
	die "$name did not start"
}

start_daemon munged munged --foreground --force --socket="$SOCKET" --key-file="$DIR/munge/munge.key" \
	--pid-file="$DIR/munge/munged.pid" --seed-file="$DIR/munge/munged.seed" --log-file="$DIR/munged.log"
for _ in $(seq 50); do [ -S "$SOCKET" ] && break; sleep 0.1; done
[ -S "$SOCKET" ] || { cat "$DIR/munged.log" >&2; die "munged did not create $SOCKET"; }
munge --socket="$SOCKET" -n | unmunge --socket="$SOCKET" >/dev/null ||
	{ cat "$DIR/munged.log" >&2; die "munge cannot encode and decode a credential through $SOCKET"; }

# --- slurm.conf --------------------------------------------------------------------------
# Two free ports from 6817 up (slurmctld, slurmd).
port_free() { ! (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }
ports=()
for p in $(seq 6817 6999); do
	port_free "$p" && ports+=("$p")
	[ ${#ports[@]} -eq 2 ] && break
done
[ ${#ports[@]} -eq 2 ] || die "no two free TCP ports between 6817 and 6999"

HOST=$(hostname -s)
# The node's real hardware as slurmd itself sees it (CPUs, sockets, cores, threads, memory);
# its first line is "NodeName=... CPUs=... RealMemory=...".
NODE=$(slurmd -C 2>/dev/null | head -1)
case $NODE in
NodeName=*) ;;
*) NODE="NodeName=$HOST CPUs=$(nproc) RealMemory=$(($(awk '/^MemTotal/ {print $2}' /proc/meminfo) / 1024))" ;;
esac
# shellcheck disable=SC2001 # [^ ]* (the first word) needs a regular expression: ${NODE/...}'s glob has no such repetition
NODE=$(echo "$NODE" | sed "s/^NodeName=[^ ]*/NodeName=$HOST/")

cat >"$DIR/slurm.conf" <<EOF
# Written by scripts/slurm/start.sh: a single-node test cluster on $HOST, all state in $DIR.
ClusterName=rocone-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
AuthType=auth/munge
# cred_expire: also how long a requeued job waits before it may start again (default
# 120 s); the test's time-limited training requeues itself, so 10 s here.
AuthInfo=socket=$SOCKET,cred_expire=10
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# A job whose dependency can never be met (an earlier stage failed) is cancelled, not left
# pending for ever.
DependencyParameters=kill_invalid_depend
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.log
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=3600
SlurmctldTimeout=30
SlurmdTimeout=30
$NODE NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$DIR/slurm.conf

start_daemon slurmctld slurmctld -D -i -f "$SLURM_CONF"
start_daemon slurmd slurmd -D -f "$SLURM_CONF"

# --- wait for an idle node ---------------------------------------------------------------
state=""
for _ in $(seq $((TIMEOUT * 2))); do
	while read -r name pid; do
		kill -0 "$pid" 2>/dev/null || {
			tail -n 30 "$DIR/$name.log" >&2
			"$(dirname "$0")/stop.sh" "$DIR" || true
			die "$name (pid $pid) exited; its log is above ($DIR/$name.log)"
		}
	done <"$DIR/pids"
	state=$(sinfo -h -n "$HOST" -o '%T' 2>/dev/null || true)
	[ "$state" = idle ] && break
	sleep 0.5
done
if [ "$state" != idle ]; then
	tail -n 20 "$DIR/slurmctld.log" "$DIR/slurmd.log" >&2 || true
	"$(dirname "$0")/stop.sh" "$DIR" || true
	die "node $HOST is '${state:-unknown}', not idle, after ${TIMEOUT}s"
fi
echo "slurm/start: node $HOST idle (slurmctld :${ports[0]}, slurmd :${ports[1]}); export SLURM_CONF=$SLURM_CONF" >&2
