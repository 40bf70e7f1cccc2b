# shellcheck shell=bash
# A throw-away Slurm cluster on this machine for the tests: munged, slurmctld and one slurmd
# (node "node1" on 127.0.0.1), every file in one temporary folder. Sourced, not run:
#   slurm_cluster_start DIR [EXTRA_CONF_LINES]   start; SLURM_CONF is exported; returns 1 with a
#                                               message (and the daemons' logs) when it cannot
#   slurm_cluster_stop                          cancel the jobs left, SIGTERM to the three daemons,
#                                               wait for them (SIGKILL after 10 s)
# Needs root (slurmd runs jobs as any user) and Debian's slurm-wlm and munge packages.

slurm_cluster_pids=()

# Waits (polling, with a deadline in seconds) until the command succeeds; 1 at the deadline.
slurm_wait_for() {
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# A free TCP port on 127.0.0.1 (asked of the kernel).
slurm_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

slurm_cluster_start() {
  local dir=$1 extra=${2:-}
  mkdir -p "$dir"/munge "$dir"/state "$dir"/spool "$dir"/log || return 1
  chmod 0755 "$dir" "$dir"/munge
  dd if=/dev/urandom of="$dir"/munge/munge.key bs=1024 count=1 status=none || return 1
  chmod 0400 "$dir"/munge/munge.key
  if ! /usr/sbin/munged --socket="$dir"/munge/munge.socket --key-file="$dir"/munge/munge.key \
       --pid-file="$dir"/munge/munged.pid --log-file="$dir"/log/munged.log \
       --seed-file="$dir"/munge/munge.seed; then
    echo "slurm_cluster: munged did not start:"; cat "$dir"/log/munged.log 2>/dev/null; return 1
  fi
  slurm_cluster_pids+=("$(cat "$dir"/munge/munged.pid)")
  local ctld_port slurmd_port
  ctld_port=$(slurm_free_port) && slurmd_port=$(slurm_free_port) || return 1
  cat > "$dir"/slurm.conf <<CONF
ClusterName=nbtest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
$extra
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 RealMemory=100
PartitionName=test Nodes=node1 Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$dir"/slurm.conf
  /usr/sbin/slurmctld -D -f "$SLURM_CONF" > "$dir"/log/slurmctld.out 2>&1 &
  slurm_cluster_pids+=("$!")
  /usr/sbin/slurmd -D -N node1 -f "$SLURM_CONF" > "$dir"/log/slurmd.out 2>&1 &
  slurm_cluster_pids+=("$!")
  slurm_node_up() { case "$(sinfo -h -n node1 -o %t 2>/dev/null)" in idle|drain|drng|alloc|mix) return 0 ;; *) return 1 ;; esac; }
  if ! slurm_wait_for 30 slurm_node_up; then
    echo "slurm_cluster: node1 did not come up within 30 s (sinfo: $(sinfo -h -n node1 -o %t 2>&1)); logs:"
    tail -n 20 "$dir"/log/*.log "$dir"/log/*.out 2>/dev/null
    return 1
  fi
}

slurm_cluster_stop() {
  local pid left
  [ ${#slurm_cluster_pids[@]} -gt 0 ] || return 0
  # Jobs first (a job step still running keeps slurmd from exiting), with a deadline.
  squeue -h -o %i 2>/dev/null | xargs -r scancel 2>/dev/null
  slurm_wait_for 10 slurm_no_jobs
  for pid in "${slurm_cluster_pids[@]}"; do kill "$pid" 2>/dev/null; done
  # munged is no child of ours (it forks): every PID is awaited by polling, with a deadline, and
  # what is left then is killed.
  slurm_all_gone() { local p; for p in "${slurm_cluster_pids[@]}"; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
  if ! slurm_wait_for 10 slurm_all_gone; then
    left=()
    for pid in "${slurm_cluster_pids[@]}"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
    echo "slurm_cluster: still running after SIGTERM and 10 s, killed: ${left[*]}"
    kill -KILL "${left[@]}" 2>/dev/null
  fi
  for pid in "${slurm_cluster_pids[@]}"; do wait "$pid" 2>/dev/null; done
  slurm_cluster_pids=()
}
slurm_no_jobs() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }
