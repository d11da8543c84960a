#!/usr/bin/env bash
# A two-node SLURM cluster on one machine, for the multi-node tests. Run as root.
#   .ci/slurm-two-nodes.sh up          start it (returns at once when it already answers)
#   .ci/slurm-two-nodes.sh down        stop its daemons (by their pid files) and delete the namespaces
#   .ci/slurm-two-nodes.sh run CMD...  run CMD on node1, the head node (sinfo, sbatch, snakemake)
#   .ci/slurm-two-nodes.sh on NODE CMD...  run CMD on node1 or node2
# The hosts node1 and node2 are network namespaces joined by a veth pair, with the private addresses
# 10.77.0.1 and 10.77.0.2 (each also has its loopback; nothing else is reachable from them). Each runs
# its slurmd under its own hostname (a UTS namespace); node1 also runs slurmctld. munged is the host's
# (.ci/slurm-up.sh starts it): its socket is a file, which the namespaces share. Inside the namespaces /etc/hosts names both nodes and
# /etc/slurm is this cluster's configuration, while the host keeps its own (the one-node CI cluster of
# .ci/slurm-up.sh can run beside this one).
#   SLURM2_DIR   state, spool, logs and pid files   (default ${TMPDIR:-/tmp}/slurm-2n)
#   NCPUS, MEM_MB  each node's size                  (default: every core, 3000 MB)
set -euo pipefail
DIR=${SLURM2_DIR:-${TMPDIR:-/tmp}/slurm-2n}
NCPUS=${NCPUS:-$(nproc)}
MEM_MB=${MEM_MB:-3000}
NET=10.77.0
NODES=(node1 node2)

say() { printf '[slurm-two-nodes %(%H:%M:%S)T] %s\n' -1 "$*"; }
address() { echo "$NET.${1#node}"; }

# on NODE CMD...: CMD in NODE's network namespace under the hostname NODE, with NODE's /etc/hosts and
# /etc/slurm bound over the host's in a mount namespace of its own. (Not `ip netns exec`: it mounts a
# fresh /sys, without the cgroup file systems slurmd needs.)
on() {
  local node=$1; shift
  nsenter --net="/run/netns/$node" unshare --mount --uts sh -c '
    mount --bind "/etc/netns/$0/hosts" /etc/hosts && mount --bind "/etc/netns/$0/slurm" /etc/slurm &&
    hostname "$0" && exec "$@"' "$node" "$@"
}

answers() { on node1 sinfo -h >/dev/null 2>&1; }
nodes_idle() { [ "$(on node1 sinfo -h -N -o %t 2>/dev/null | grep -c idle)" = 2 ]; }

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local seconds=$1 what=$2; shift 2
  for _ in $(seq "$seconds"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  say "gave up waiting for $what after ${seconds}s (logs: $DIR/log)"; return 1
}

make_hosts() {
  ip netns add node1
  ip netns add node2
  ip link add veth-node1 type veth peer name veth-node2
  for node in "${NODES[@]}"; do
    ip link set "veth-$node" netns "$node"
    ip -n "$node" addr add "$(address "$node")/24" dev "veth-$node"
    ip -n "$node" link set lo up
    ip -n "$node" link set "veth-$node" up
    mkdir -p "/etc/netns/$node/slurm" /etc/slurm
    printf '127.0.0.1 localhost\n%s node1\n%s node2\n' "$(address node1)" "$(address node2)" \
      > "/etc/netns/$node/hosts"
  done
}

write_configs() {
  mkdir -p "$DIR"/{state,log} "$DIR/spool/node1" "$DIR/spool/node2"
  # As .ci/slurm-up.sh's, with two nodes. TaskPlugin none: both "nodes" share this machine's cores, and
  # binding each node's tasks to its first cores would put both on the same ones.
  cat > "$DIR/slurm.conf" <<CONF
ClusterName=twonodes
SlurmctldHost=node1($(address node1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
MinJobAge=600
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
NodeName=node1 NodeAddr=$(address node1) CPUs=$NCPUS RealMemory=$MEM_MB State=UNKNOWN
NodeName=node2 NodeAddr=$(address node2) CPUs=$NCPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
CONF
  for node in "${NODES[@]}"; do cp "$DIR/slurm.conf" "/etc/netns/$node/slurm/slurm.conf"; done
}

munge_answers() { [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; }

up() {
  if ip netns list | grep -qw node1 && answers; then say "the two-node cluster already answers"; on node1 sinfo; return 0; fi
  [ "$(id -u)" = 0 ] || { echo "slurm-two-nodes.sh: run as root (namespaces and daemons)" >&2; exit 1; }
  command -v slurmd >/dev/null && munge_answers \
    || { echo "slurm-two-nodes.sh: needs slurmd installed and munged running (.ci/slurm-up.sh does both)" >&2; exit 1; }
  down >/dev/null 2>&1 || true
  local t0=$SECONDS
  make_hosts
  write_configs
  on node1 /usr/sbin/slurmctld -c -i
  for node in "${NODES[@]}"; do on "$node" /usr/sbin/slurmd -N "$node"; done
  wait_for 60 "two idle nodes" nodes_idle
  say "two nodes up after $((SECONDS - t0))s"
  on node1 sinfo -N
}

down() {
  for pidfile in "$DIR"/slurmd.node1.pid "$DIR"/slurmd.node2.pid "$DIR/slurmctld.pid"; do
    [ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null && say "stopped $(basename "$pidfile" .pid)"
  done
  for _ in $(seq 10); do
    alive=0
    for pidfile in "$DIR"/slurmd.node1.pid "$DIR"/slurmd.node2.pid "$DIR/slurmctld.pid"; do
      [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && alive=1
    done
    [ "$alive" = 0 ] && break
    sleep 1
  done
  for node in "${NODES[@]}"; do
    # whatever still runs inside a namespace (a job's processes) goes with it
    for pid in $(ip netns pids "$node" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns delete "$node" 2>/dev/null || true
    rm -rf "/etc/netns/$node"
  done
  return 0
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  run) shift; on node1 "$@" ;;
  on) shift; on "$@" ;;
  *) echo "usage: $0 up | down | run CMD... | on NODE CMD..." >&2; exit 2 ;;
esac
