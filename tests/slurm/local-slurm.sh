#!/usr/bin/env bash
# local-slurm.sh - a real single-node SLURM cluster on one Debian 12 machine, for testing the
# workflow through profiles/slurm (snakemake-executor-plugin-slurm). Used by tests/slurm/.
#
#   local-slurm.sh [start]   install (if needed), configure, start, wait for node idle
#   local-slurm.sh stop      cancel jobs, stop the daemons (by PID from their pid files)
#   local-slurm.sh status    show daemon PIDs, sinfo, sacct reachability
#   local-slurm.sh selftest  submit a CPU job and a --gpus=1 job, check they COMPLETE
#
# Environment knobs:
#   SLURM_ACCOUNTING=1   (default) MariaDB + slurmdbd, so `sacct` works (the plugin's
#                        default status command). 0 = accounting_storage/none: then
#                        snakemake needs `--slurm-status-command squeue`.
#   SLURM_FAKE_GPUS=1    number of fake GPUs (GRES gpu backed by /dev/null-like char
#                        devices) so `sbatch --gpus=N` / `resources: gpu=N` is accepted.
#                        0 disables GRES.
#   SLURM_WAIT_S=120     how long to wait for the node to become idle.
#   SLURM_NODE_MEM_MB=   memory (MB) the node advertises. Empty: what `slurmd -C` measures,
#                        minus 512 MB. A larger value (with SlurmdParameters=config_overrides)
#                        lets the profile's real memory requests through on a small machine;
#                        nothing enforces memory here (no cgroups), so jobs are unaffected.
#   SLURM_NODE_CPUS=     CPUs the node advertises (same idea; empty: the real count).
#
# Needs root and Debian's package repositories (no systemd required). Idempotent:
# re-running only starts what is not running and restarts slurmctld/slurmd when the
# generated configuration changed.
set -euo pipefail

ACCOUNTING="${SLURM_ACCOUNTING:-1}"
FAKE_GPUS="${SLURM_FAKE_GPUS:-1}"
WAIT_S="${SLURM_WAIT_S:-120}"
NODE_MEM_MB="${SLURM_NODE_MEM_MB:-}"
NODE_CPUS="${SLURM_NODE_CPUS:-}"
DB_PASS="${SLURM_DB_PASS:-slurmdbpass}"

CONF_DIR=/etc/slurm
LOG_DIR=/var/log/slurm
STATE_DIR=/var/lib/slurm
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
DBD_PID=/run/slurmdbd.pid
MUNGE_PID=/run/munge/munged.pid
MARIADB_PID=/run/mysqld/mysqld.pid
MARIADB_LOG="$LOG_DIR/mariadbd.log"
STARTED_MARIADB=/run/local-slurm.started-mariadbd
STARTED_MUNGE=/run/local-slurm.started-munged

log() { printf '[local-slurm %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root"

# pid_alive PIDFILE NAME -> 0 if the pid in PIDFILE is alive and its comm is NAME
pid_alive() {
  local f="$1" name="$2" pid
  [ -s "$f" ] || return 1
  pid="$(tr -dc 0-9 < "$f")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}

# stop_pidfile PIDFILE NAME: SIGTERM the pid, wait up to 30 s, then SIGKILL
stop_pidfile() {
  local f="$1" name="$2" pid i
  if ! pid_alive "$f" "$name"; then rm -f "$f"; return 0; fi
  pid="$(tr -dc 0-9 < "$f")"
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then log "$name did not exit, SIGKILL"; kill -KILL "$pid" || true; fi
  rm -f "$f"
}

# wait_for SECONDS CMD...: poll CMD every 0.5 s
wait_for() {
  local secs="$1"; shift
  local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.5
  done
}

install_packages() {
  local pkgs=(munge slurmctld slurmd slurm-client)
  if [ "$ACCOUNTING" = 1 ]; then pkgs+=(slurmdbd mariadb-server); fi
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/local-slurm-apt.log 2>&1; then
    log "install failed, running apt-get update and retrying"
    apt-get update >>/tmp/local-slurm-apt.log 2>&1
    apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/local-slurm-apt.log 2>&1 \
      || { tail -20 /tmp/local-slurm-apt.log >&2; die "apt-get install failed"; }
  fi
}

ensure_hostname_resolves() {
  HOST="$(hostname -s)"
  if ! getent hosts "$HOST" >/dev/null; then
    log "adding $HOST to /etc/hosts"
    echo "127.0.0.1 $HOST" >> /etc/hosts
  fi
}

start_munge() {
  if [ ! -s /etc/munge/munge.key ]; then
    log "creating munge key"
    mungekey --create --keyfile=/etc/munge/munge.key
  fi
  chown munge:munge /etc/munge /etc/munge/munge.key
  chmod 0700 /etc/munge; chmod 0600 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/log/munge
  install -d -o munge -g munge -m 0711 /var/lib/munge
  if ! pid_alive "$MUNGE_PID" munged; then
    log "starting munged"
    touch "$STARTED_MUNGE"
    runuser -u munge -- /usr/sbin/munged
  fi
  wait_for 20 bash -c 'munge -n | unmunge' || die "munge does not work"
}

write_if_changed() {  # write_if_changed PATH MODE OWNER < content ; sets CHANGED=1 when different
  local path="$1" mode="$2" owner="$3" tmp
  tmp="$(mktemp)"; cat > "$tmp"
  if [ -f "$path" ] && cmp -s "$tmp" "$path"; then rm -f "$tmp"; else
    install -m "$mode" -o "${owner%%:*}" -g "${owner##*:}" "$tmp" "$path"; rm -f "$tmp"; CHANGED=1
  fi
}

# A machine with its own SLURM setup is left alone: exit 3 (the test skips on it).
refuse_foreign_config() {
  if [ -f "$CONF_DIR/slurm.conf" ] && ! head -1 "$CONF_DIR/slurm.conf" | grep -q '^# generated by'; then
    log "$CONF_DIR/slurm.conf was not written by this script; not touching this machine's SLURM"
    exit 3
  fi
}

write_configs() {
  CHANGED=0
  install -d -m 0755 "$CONF_DIR"
  install -d -o slurm -g slurm -m 0755 "$LOG_DIR" "$STATE_DIR" "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd"
  local node cpus mem sockets cores threads gres_line="" gres_types="" acct
  node="$(slurmd -C | head -1)"
  cpus="$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")"
  sockets="$(sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$node")"
  cores="$(sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$node")"
  threads="$(sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$node")"
  mem="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")"
  # leave some headroom so a slightly smaller reading never drains the node
  mem=$(( mem > 2048 ? mem - 512 : mem ))
  local overrides=""
  if [ -n "$NODE_MEM_MB" ] || [ -n "$NODE_CPUS" ]; then
    overrides="SlurmdParameters=config_overrides"
    [ -z "$NODE_MEM_MB" ] || mem="$NODE_MEM_MB"
    if [ -n "$NODE_CPUS" ]; then cpus="$NODE_CPUS"; sockets=1; cores="$NODE_CPUS"; threads=1; fi
  fi
  if [ "$FAKE_GPUS" -gt 0 ]; then
    gres_types="GresTypes=gpu"
    gres_line=" Gres=gpu:$FAKE_GPUS"
    # Slurm drops file-less GPUs ("Removing file-less GPU"), so each fake GPU needs a
    # character device. One GPU: /dev/null. More: /dev/fakegpuN (same major:minor as /dev/null).
    local files=()
    if [ "$FAKE_GPUS" -eq 1 ]; then files=(/dev/null); rm -f /dev/fakegpu[0-9]*; else
      for i in $(seq 0 $((FAKE_GPUS - 1))); do
        [ -c "/dev/fakegpu$i" ] || mknod -m 0666 "/dev/fakegpu$i" c 1 3
        files+=("/dev/fakegpu$i")
      done
    fi
    local gres_conf="AutoDetect=off"
    for f in "${files[@]}"; do gres_conf+=$'\n'"NodeName=$HOST Name=gpu File=$f"; done
    write_if_changed "$CONF_DIR/gres.conf" 0644 root:root <<<"$gres_conf"
  elif [ -e "$CONF_DIR/gres.conf" ]; then
    rm -f "$CONF_DIR/gres.conf"; CHANGED=1
  fi
  if [ "$ACCOUNTING" = 1 ]; then
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30"
  else
    acct="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
  fi
  write_if_changed "$CONF_DIR/slurm.conf" 0644 root:root <<EOF
# generated by tests/slurm/local-slurm.sh
ClusterName=local
SlurmctldHost=$HOST
SlurmUser=slurm
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
MailProg=/bin/true
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmdSpoolDir=$STATE_DIR/slurmd
StateSaveLocation=$STATE_DIR/slurmctld
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
$acct
JobCompType=jobcomp/none
$gres_types
$overrides
SlurmctldDebug=info
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdDebug=info
SlurmdLogFile=$LOG_DIR/slurmd.log
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$cpus SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem$gres_line State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  if [ "$ACCOUNTING" = 1 ]; then
    write_if_changed "$CONF_DIR/slurmdbd.conf" 0600 slurm:slurm <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
LogFile=$LOG_DIR/slurmdbd.log
PidFile=$DBD_PID
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
  fi
}

start_accounting() {
  install -d -o mysql -g root -m 0755 /run/mysqld
  if ! mariadb-admin ping >/dev/null 2>&1; then
    if [ ! -d /var/lib/mysql/mysql ]; then
      log "initialising MariaDB data directory"
      mariadb-install-db --user=mysql >/dev/null
    fi
    log "starting mariadbd"
    touch "$STARTED_MARIADB"
    setsid nohup /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 \
      --pid-file="$MARIADB_PID" >>"$MARIADB_LOG" 2>&1 </dev/null &
    wait_for 60 mariadb-admin ping || { tail -20 "$MARIADB_LOG" >&2; die "mariadbd did not start"; }
  fi
  mariadb -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
              GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
  if ! pid_alive "$DBD_PID" slurmdbd; then
    log "starting slurmdbd"
    /usr/sbin/slurmdbd
  fi
  wait_for 60 sacctmgr -n list cluster || { tail -20 "$LOG_DIR/slurmdbd.log" >&2; die "slurmdbd not answering"; }
}

start_slurm() {
  if [ "$CHANGED" = 1 ]; then
    stop_pidfile "$SLURMD_PID" slurmd
    stop_pidfile "$CTLD_PID" slurmctld
  fi
  if ! pid_alive "$CTLD_PID" slurmctld; then
    log "starting slurmctld"
    /usr/sbin/slurmctld
  fi
  wait_for 30 scontrol ping || { tail -20 "$LOG_DIR/slurmctld.log" >&2; die "slurmctld not answering"; }
  if ! pid_alive "$SLURMD_PID" slurmd; then
    log "starting slurmd"
    /usr/sbin/slurmd
  fi
  local end=$(( $(date +%s) + WAIT_S )) state resumed=0
  while :; do
    state="$(sinfo -h -n "$HOST" -o %T 2>/dev/null || true)"
    case "$state" in
      idle|mixed|allocated) break ;;
      *drain*|*down*|*inval*|*fail*)
        if [ "$resumed" = 0 ]; then
          log "node state '$state' ($(sinfo -h -n "$HOST" -o %E)); trying resume"
          scontrol update nodename="$HOST" state=resume || true; resumed=1
        fi ;;
    esac
    if [ "$(date +%s)" -ge "$end" ]; then
      tail -20 "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" >&2
      die "node $HOST not idle after ${WAIT_S}s (state: '$state')"
    fi
    sleep 0.5
  done
  if [ "$ACCOUNTING" = 1 ]; then
    # slurmctld registers cluster 'local' with slurmdbd itself; wait until sacct sees it
    wait_for 30 bash -c "sacctmgr -n -P list cluster format=cluster | grep -qx local" \
      || log "warning: cluster 'local' not (yet) registered in slurmdbd"
  fi
}

cmd_start() {
  local t0; t0=$(date +%s)
  refuse_foreign_config
  install_packages
  ensure_hostname_resolves
  start_munge
  write_configs
  if [ "$ACCOUNTING" = 1 ]; then start_accounting; fi
  start_slurm
  log "ready in $(( $(date +%s) - t0 ))s"
  sinfo
}

cmd_stop() {
  if pid_alive "$CTLD_PID" slurmctld; then
    local jobs; jobs="$(squeue -h -o %i 2>/dev/null || true)"
    if [ -n "$jobs" ]; then log "cancelling jobs: $(echo $jobs)"; scancel $jobs || true; sleep 2; fi
  fi
  stop_pidfile "$SLURMD_PID" slurmd
  stop_pidfile "$CTLD_PID" slurmctld
  stop_pidfile "$DBD_PID" slurmdbd
  # MariaDB and munged may serve other things on this machine: stop them only if started here.
  if [ -e "$STARTED_MARIADB" ]; then stop_pidfile "$MARIADB_PID" mariadbd; rm -f "$STARTED_MARIADB"; fi
  if [ -e "$STARTED_MUNGE" ]; then stop_pidfile "$MUNGE_PID" munged; rm -f "$STARTED_MUNGE"; fi
  rm -f /dev/fakegpu[0-9]*
  log "stopped"
}

cmd_status() {
  local f n
  for f in "$MUNGE_PID:munged" "$MARIADB_PID:mariadbd" "$DBD_PID:slurmdbd" "$CTLD_PID:slurmctld" "$SLURMD_PID:slurmd"; do
    n="${f##*:}"
    if pid_alive "${f%%:*}" "$n"; then echo "$n: running (pid $(cat "${f%%:*}"))"; else echo "$n: not running"; fi
  done
  sinfo 2>&1 || true
  sacct -X -n -o JobID,State 2>&1 | tail -3 || true
}

cmd_selftest() {
  local d j1 j2 s1 s2
  d="$(mktemp -d)"
  j1="$(sbatch --parsable --wait -D "$d" -o "$d/cpu.out" --wrap 'hostname')"
  if [ "$FAKE_GPUS" -gt 0 ]; then
    j2="$(sbatch --parsable --wait -D "$d" -o "$d/gpu.out" --gpus=1 --wrap 'echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES')"
  fi
  s1="$(scontrol show job "$j1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')"
  echo "job $j1 (cpu): ${s1:-?} -> $(cat "$d/cpu.out")"
  if [ -n "${j2:-}" ]; then
    s2="$(scontrol show job "$j2" 2>/dev/null | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')"
    echo "job $j2 (gpu): ${s2:-?} -> $(cat "$d/gpu.out")"
  fi
  if [ "$ACCOUNTING" = 1 ]; then
    wait_for 20 bash -c "sacct -X -n -P -j $j1 -o State | grep -q COMPLETED" || die "sacct does not show job $j1 COMPLETED"
    sacct -X -j "$j1${j2:+,$j2}" -o JobID,State,ExitCode,AllocTRES%45
  fi
  [ "$s1" = COMPLETED ] && { [ -z "${j2:-}" ] || [ "$s2" = COMPLETED ]; } || die "selftest failed"
  rm -rf "$d"
  echo "selftest OK"
}

case "${1:-start}" in
  start) cmd_start ;;
  stop) refuse_foreign_config; cmd_stop ;;
  status) cmd_status ;;
  selftest) HOST="$(hostname -s)"; cmd_selftest ;;
  *) echo "usage: $0 [start|stop|status|selftest]" >&2; exit 2 ;;
esac
