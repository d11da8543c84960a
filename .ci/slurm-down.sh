#!/usr/bin/env bash
# Stop the daemons .ci/slurm-up.sh started, each by its pid file (never by name).
set -u
SLURM_DIR=${SLURM_DIR:-${TMPDIR:-/tmp}/slurm-ci}
for pidfile in "$SLURM_DIR/slurmd.pid" "$SLURM_DIR/slurmctld.pid" "$SLURM_DIR/slurmdbd.pid" \
               /run/mysqld/mysqld.pid /run/munge/munged.pid; do
  if [ -s "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null && echo "[slurm-down] stopped $(basename "$pidfile" .pid) ($pid)"
  fi
done
# Give the daemons a moment to write their state and remove their pid files.
for _ in $(seq 10); do
  alive=0
  for pidfile in "$SLURM_DIR/slurmd.pid" "$SLURM_DIR/slurmctld.pid"; do
    [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && alive=1
  done
  [ "$alive" = 0 ] && break
  sleep 1
done
exit 0
