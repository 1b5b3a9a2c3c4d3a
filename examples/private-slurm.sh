#!/bin/sh
# A private single-node Slurm on this machine, to try 'launcher slurm'
# without a cluster (the configuration of the tests' internal/slurmtest).
#
#   examples/private-slurm.sh start   # prints the SLURM_CONF line to export
#   examples/private-slurm.sh stop
#
# Needs Debian's slurmctld, slurmd and slurm-client (install.sh --test-deps).
# Runs as you: jobs run as you. No authentication daemon (auth/none), so keep
# it to a machine of your own. PORT (default 27817) and PORT+1 must be free;
# the node claims CPUS CPUs (default 8) whatever the machine has.
set -eu
D=${PRIVATE_SLURM_DIR:-/tmp/approxtune-slurm-$(id -un)}
PORT=${PORT:-27817}
CPUS=${CPUS:-8}
PATH=$PATH:/usr/sbin

stop() {
	for d in slurmd slurmctld; do
		if [ -f "$D/$d.mypid" ]; then
			pid=$(cat "$D/$d.mypid")
			kill "$pid" 2>/dev/null || true
			i=0
			while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
			rm -f "$D/$d.mypid"
		fi
	done
}

case "${1:-}" in
start)
	command -v slurmctld >/dev/null && command -v sbatch >/dev/null ||
		{ echo "needs slurmctld, slurmd and slurm-client: sudo apt-get install slurmctld slurmd slurm-client" >&2; exit 1; }
	stop
	rm -rf "$D"
	mkdir -p "$D/state" "$D/spool" "$D/log"
	chmod 755 "$D" "$D/state" "$D/spool" "$D/log"
	mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
	cat >"$D/slurm.conf" <<EOC
ClusterName=private
SlurmctldHost=localhost
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
SchedulerParameters=sched_interval=1
MinJobAge=300
MailProg=/bin/true
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS Boards=1 SocketsPerBoard=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=$((mem * 9 / 10))
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOC
	export SLURM_CONF="$D/slurm.conf"
	setsid slurmctld -D -i -f "$SLURM_CONF" >"$D/log/slurmctld.out" 2>&1 &
	echo $! >"$D/slurmctld.mypid"
	setsid slurmd -D -f "$SLURM_CONF" >"$D/log/slurmd.out" 2>&1 &
	echo $! >"$D/slurmd.mypid"
	i=0
	until [ "$(sinfo -h -o %T 2>/dev/null)" = idle ]; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then echo "the node is not idle after 20 s: see $D/log" >&2; stop; exit 1; fi
		sleep 0.2
	done
	echo "private Slurm up (partition debug, $CPUS CPUs); in your shell:"
	echo "  export SLURM_CONF=$SLURM_CONF"
	;;
stop)
	stop
	echo "private Slurm stopped (its files: $D)"
	;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
