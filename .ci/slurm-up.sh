#!/usr/bin/env bash
# Start a throw-away one-node SLURM cluster (Debian 12, slurm-wlm 22.05, munge) for the SLURM tests.
# Run as root. Idempotent: returns at once when `sinfo` already answers.
#   SLURM_DIR       state, spool, logs and pid files   (default ${TMPDIR:-/tmp}/slurm-ci)
#   NCPUS, MEM_MB   the node's size                    (default: every core, 4000 MB)
#   SLURM_WITH_DBD  1: also MariaDB + slurmdbd, so that `sacct` answers (the plugin's preferred status command)
# The node has one fake GPU (a GRES backed by /dev/null): rules that ask for gpu=1 are scheduled, and
# SLURM sets CUDA_VISIBLE_DEVICES=0 inside them. Stop everything with .ci/slurm-down.sh.
set -euo pipefail
SLURM_DIR=${SLURM_DIR:-${TMPDIR:-/tmp}/slurm-ci}
NCPUS=${NCPUS:-$(nproc)}
MEM_MB=${MEM_MB:-4000}
WITH_DBD=${SLURM_WITH_DBD:-0}

say() { printf '[slurm-up %(%H:%M:%S)T] %s\n' -1 "$*"; }
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local seconds=$1 what=$2; shift 2
  for _ in $(seq "$seconds"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  say "gave up waiting for $what after ${seconds}s (logs: $SLURM_DIR/log)"; return 1
}

install_packages() {
  local pkgs="slurm-wlm munge" missing=""
  [ "$WITH_DBD" = 1 ] && pkgs="$pkgs slurmdbd mariadb-server"
  for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  [ -z "$missing" ] && return 0
  say "installing$missing"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

write_configs() {
  local acct=accounting_storage/none
  [ "$WITH_DBD" = 1 ] && acct=accounting_storage/slurmdbd
  mkdir -p "$SLURM_DIR"/{state,spool,log} /etc/slurm
  # MinJobAge=600: finished jobs stay visible to squeue long enough for Snakemake's status checks.
  # DefMemPerCPU: without it a job with no memory request takes the whole node.
  cat > "$SLURM_DIR/slurm.conf" <<CONF
ClusterName=ci
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=$acct
AccountingStorageHost=localhost
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
GresTypes=gpu
MinJobAge=600
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$NCPUS RealMemory=$MEM_MB Gres=gpu:fake:1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=localhost MaxTime=INFINITE State=UP
CONF
  cat > "$SLURM_DIR/gres.conf" <<CONF
AutoDetect=off
NodeName=localhost Name=gpu Type=fake File=/dev/null
CONF
  # /etc/slurm, not SLURM_CONF: the plugin strips every SLURM_* variable before its inner srun.
  ln -sf "$SLURM_DIR/slurm.conf" /etc/slurm/slurm.conf
  ln -sf "$SLURM_DIR/gres.conf" /etc/slurm/gres.conf
}

start_munge() {
  mkdir -p /run/munge && chown munge:munge /run/munge
  if [ ! -s /etc/munge/munge.key ]; then mungekey --create; chown munge:munge /etc/munge/munge.key; fi
  [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null && return 0
  runuser -u munge -- /usr/sbin/munged
}

start_dbd() {
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 --skip-networking=0 \
    --pid-file=/run/mysqld/mysqld.pid >"$SLURM_DIR/log/mariadb.log" 2>&1 &
  wait_for 30 MariaDB mysqladmin ping
  mysql -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
            CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm';
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
  cat > "$SLURM_DIR/slurmdbd.conf" <<CONF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
LogFile=$SLURM_DIR/log/slurmdbd.log
PidFile=$SLURM_DIR/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=slurm_acct_db
StorageUser=slurm
StoragePass=slurm
CONF
  chmod 600 "$SLURM_DIR/slurmdbd.conf"
  ln -sf "$SLURM_DIR/slurmdbd.conf" /etc/slurm/slurmdbd.conf
  /usr/sbin/slurmdbd
  wait_for 30 slurmdbd sacctmgr -n list cluster
  sacctmgr -i add cluster ci >/dev/null || true
  sacctmgr -i add account ci >/dev/null || true
  sacctmgr -i add user root account=ci >/dev/null || true
}

node_idle() { sinfo -h -o %t | grep -q idle; }

main() {
  if sinfo -h >/dev/null 2>&1; then say "a cluster already answers"; sinfo; return 0; fi
  [ "$(id -u)" = 0 ] || { echo "slurm-up.sh: run as root (it installs packages and starts daemons)" >&2; exit 1; }
  local t0=$SECONDS
  install_packages
  say "packages ready after $((SECONDS - t0))s"
  write_configs
  start_munge
  [ "$WITH_DBD" = 1 ] && start_dbd
  /usr/sbin/slurmctld -c -i     # -c: clean state; -i: ignore state left from an earlier run
  /usr/sbin/slurmd -N localhost
  wait_for 60 "an idle node" node_idle
  say "cluster up after $((SECONDS - t0))s"
  sinfo
}

main "$@"
