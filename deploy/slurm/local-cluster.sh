#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for testing deploy/slurm (CI):
# writes slurm.conf for this host and its real CPU count, starts munged,
# slurmctld and slurmd. Needs root and Debian's slurm-wlm and munge.
#
#   deploy/slurm/local-cluster.sh start    # then sinfo shows the node idle
#   deploy/slurm/local-cluster.sh stop
set -euo pipefail
conf=/etc/slurm/slurm.conf
case "${1:-start}" in
stop)
  pkill -x slurmd || true; pkill -x slurmctld || true; pkill -x munged || true
  exit 0 ;;
start) ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
host=$(hostname -s)
# The node line slurmd itself detects (CPUs, sockets, cores, memory).
node=$(slurmd -C | head -1)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat > "$conf" <<CONF
# Written by deploy/slurm/local-cluster.sh: one node, this machine.
ClusterName=ckbench-ci
SlurmctldHost=$host
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MpiDefault=none
$node State=UNKNOWN
PartitionName=ckbench Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
chown munge:munge /run/munge 2>/dev/null || true
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged || /usr/sbin/munged --force
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 60); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
  case "$state" in idle*|mixed*|allocated*) echo "slurm: node $host $state"; exit 0 ;; esac
  sleep 1
done
echo "slurm: node $host did not come up (state: ${state:-none}); logs in /var/log/slurm" >&2
exit 1
