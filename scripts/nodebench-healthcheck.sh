#!/usr/bin/env bash
# Slurm health check of a GPU node with nodebench: validate's fast checks on every call, a
# heavier level on the admin's schedule; drains the node on FAIL, resumes it on a later PASS
# when it drained it itself. For HealthCheckProgram, Prolog and Epilog. See --help.
set -uo pipefail

prog=$(basename "$0")
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PREFIX="nodebench-hc:"
REASON_MAX=120

usage() {
  cat <<EOF
Usage: $prog [options]

Judges this node with nodebench and keeps its Slurm state in step with the verdict:
  - every call runs \`nodebench validate --level 1\` (doctor's checks: driver, libraries, GPUs
    seen, PCIe links, ECC, throttling, ...; seconds); when the heavy level is due (--heavy-every)
    and the node runs no job, \`validate --level HEAVY\` instead (benchmarks: a minute at level 2);
  - FAIL: drains the node, reason "$PREFIX CHECK gpuN, ..." naming the failing checks (letters,
    digits and . , : = _ / - only; at most $REASON_MAX characters);
  - PASS: resumes the node only when it is drained with a reason that starts with "$PREFIX"
    (a drain of this script); a node an admin drained with any other reason stays drained,
    and a failing check never rewrites an admin's reason;
  - the check cannot run (nodebench missing or not executable, bad usage, a crash, the state
    folder not writable): drains with the reason "$PREFIX error: WHAT" (--on-error ignore:
    only logs it); a check past its time limit (a hung GPU) drains with "$PREFIX timeout: ...".
Two calls at once do not race: a second call while one runs (a lock in the state folder)
waits up to --lock-wait seconds, then exits 0 without doing anything.

Options:
  --node NAME          Slurm node name (default: \$SLURMD_NODENAME, else \`hostname -s\`)
  --nodebench PATH     the nodebench binary (default: \$NODEBENCH_BIN, else nodebench on PATH,
                       else build/nodebench beside this script)
  --state-dir DIR      lock, time of the last heavy run, last verdict and outputs
                       (default: /var/lib/nodebench-healthcheck)
  --heavy-level N      validate level of the heavy run, 2 or 3 (default: 2)
  --heavy-every S      run the heavy level when the last one finished S seconds ago or more
                       (default: 0, never); it waits for a node without jobs (state IDLE)
  --level N            run validate level N (1, 2 or 3) now, whatever the schedule (a timer's
                       or the nightly job's call); N >= 2 counts as the heavy run
  --no-heavy-drain     do not drain the node while a level 2 or 3 check runs (by default it
                       does, reason "$PREFIX level N check running", so that no job starts
                       beside the benchmarks; the verdict then resumes it or sets its reason)
  --timeout S          time limit of the level 1 check (default: 45)
  --heavy-timeout S    time limit of a level 2 or 3 check (default: 50). slurmd kills a
                       HealthCheckProgram after 60 s: keep both under that there, and give a
                       level 3 run (hours) its own limit from a timer or the nightly job
  --lock-wait S        how long a second call waits for the first (default: 0)
  --prometheus FILE    also write validate's verdict there (node_exporter's textfile folder),
                       plus FILE's folder/nodebench_healthcheck.prom with this script's own
                       status; both replaced atomically
  --slurm-conf FILE    slurm.conf for scontrol (default: \$SLURM_CONF, else the -f FILE of the
                       slurmd that started this script, else scontrol's built-in path)
  --on-error drain|ignore
                       when the check itself cannot run (default: drain, saying so)
  --no-drain           judge and report only; never change the node's state
  -h, --help           show this help

Exit status:
  0  pass (the node resumed when this script had drained it), or another call held the lock
  1  a check failed: the node is drained (or was already drained by an admin: left alone)
  2  bad usage of this script
  3  the check could not run or timed out (the node drained saying so, unless --on-error ignore)
  4  scontrol could not drain or resume the node (or is not found); the verdict is in the log
slurmd only logs a HealthCheckProgram's exit status. In a Prolog the script drains the node first,
with its reason; its exit 1 then makes Slurm requeue the job (held), and the node keeps the
script's reason. A non-zero exit of an Epilog drains the node too.
EOF
}

die() { echo "$prog: error: $*" >&2; exit 2; }
log() { echo "$prog: $*"; }

node=${SLURMD_NODENAME:-}
nodebench=${NODEBENCH_BIN:-}
state_dir=/var/lib/nodebench-healthcheck
heavy_level=2 heavy_every=0 timeout_s=45 heavy_timeout_s=50 lock_wait=0 force_level=""
prom="" slurm_conf="" on_error=drain no_drain=0 heavy_drain=1

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
need() { [ $# -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --node) need "$@"; node=$2; shift 2 ;;
    --nodebench) need "$@"; nodebench=$2; shift 2 ;;
    --state-dir) need "$@"; state_dir=$2; shift 2 ;;
    --heavy-level) need "$@"; heavy_level=$2; shift 2 ;;
    --heavy-every) need "$@"; heavy_every=$2; shift 2 ;;
    --level) need "$@"; force_level=$2; shift 2 ;;
    --timeout) need "$@"; timeout_s=$2; shift 2 ;;
    --heavy-timeout) need "$@"; heavy_timeout_s=$2; shift 2 ;;
    --lock-wait) need "$@"; lock_wait=$2; shift 2 ;;
    --prometheus) need "$@"; prom=$2; shift 2 ;;
    --slurm-conf) need "$@"; slurm_conf=$2; shift 2 ;;
    --on-error) need "$@"; on_error=$2; shift 2 ;;
    --no-drain) no_drain=1; shift ;;
    --no-heavy-drain) heavy_drain=0; shift ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "$heavy_level" in 2|3) ;; *) die "--heavy-level must be 2 or 3, not '$heavy_level'" ;; esac
case "$force_level" in ""|1|2|3) ;; *) die "--level must be 1, 2 or 3, not '$force_level'" ;; esac
for v in heavy_every timeout_s heavy_timeout_s lock_wait; do
  opt=${v%_s}; is_uint "${!v}" || die "--${opt//_/-} must be a whole number of seconds, not '${!v}'"
done
if [ "$timeout_s" -eq 0 ] || [ "$heavy_timeout_s" -eq 0 ]; then die "--timeout and --heavy-timeout must be above 0"; fi
case "$on_error" in drain|ignore) ;; *) die "--on-error must be drain or ignore, not '$on_error'" ;; esac
[ -n "$node" ] || node=$(hostname -s 2>/dev/null) || true
[ -n "$node" ] || die "no node name: give --node or set SLURMD_NODENAME"
[[ $node =~ ^[A-Za-z0-9._-]+$ ]] || die "--node '$node' is not a Slurm node name"

# HealthCheckProgram runs without SLURM_CONF: take the conf of the slurmd above us, if any.
slurmd_conf() {
  local pid=$$ ppid args i
  while [ "$pid" -gt 1 ]; do
    ppid=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || return 1
    [ -n "$ppid" ] || return 1
    pid=$ppid
    mapfile -d '' -t args < "/proc/$pid/cmdline" 2>/dev/null || continue
    case "${args[0]:-}" in */slurmd|slurmd) ;; *) continue ;; esac
    for ((i = 1; i < ${#args[@]}; i++)); do
      case "${args[i]}" in
        -f) echo "${args[i+1]:-}"; return 0 ;;
        -f*) echo "${args[i]#-f}"; return 0 ;;
      esac
    done
    return 1
  done
  return 1
}
if [ -n "$slurm_conf" ]; then
  [ -f "$slurm_conf" ] && [ -r "$slurm_conf" ] || die "--slurm-conf '$slurm_conf' is not a readable file"
  export SLURM_CONF=$slurm_conf
elif [ -z "${SLURM_CONF:-}" ] && c=$(slurmd_conf) && [ -n "$c" ]; then
  export SLURM_CONF=$c
fi

# ---- Slurm ----------------------------------------------------------------------------------
node_state=""   # scontrol's State=, e.g. IDLE+DRAIN
node_reason=""  # the reason without its [user@time] tail; empty when none
read_node() {
  local line
  line=$(scontrol -o show node "$node" 2>&1) || { log "scontrol show node $node failed: $line"; return 1; }
  node_state=$(sed -n 's/.* State=\([^ ]*\).*/\1/p' <<<"$line")
  # sinfo's %E is the whole reason ("none" without one); one line per partition.
  node_reason=$(sinfo -h -N -n "$node" -o '%E' 2>/dev/null | head -n 1)
  [ "$node_reason" != none ] || node_reason=""
}
drained() { [[ $node_state == *DRAIN* ]]; }
ours() { [[ $node_reason == "$PREFIX"* ]]; }

# Drain with REASON unless an admin drained the node (any reason not ours). 0 done or left, 4 failed.
drain() {
  local reason=$1 out
  [ "$no_drain" = 1 ] && { log "would drain $node: $reason (--no-drain)"; return 0; }
  read_node || return 4
  if drained && ! ours; then
    log "$node is drained by someone else (reason: ${node_reason:-none}): left as it is"
    return 0
  fi
  if drained && [ "$node_reason" = "$reason" ]; then
    log "$node stays drained: $reason"
    return 0
  fi
  out=$(scontrol update NodeName="$node" State=DRAIN Reason="$reason" 2>&1) ||
    { log "scontrol could not drain $node: $out"; return 4; }
  log "drained $node: $reason"
}

# Resume the node if this script drained it. 0 done or nothing to do, 4 failed.
resume() {
  local out
  [ "$no_drain" = 1 ] && return 0
  read_node || return 4
  if drained && ours; then
    out=$(scontrol update NodeName="$node" State=RESUME 2>&1) ||
      { log "scontrol could not resume $node: $out"; return 4; }
    log "resumed $node (was: $node_reason)"
  elif drained; then
    log "$node passes but stays drained: drained by someone else (reason: ${node_reason:-none})"
  fi
  return 0
}

# ---- The verdict ----------------------------------------------------------------------------
# Only these characters reach the reason (no shell metacharacters); everything else becomes '_'.
clean() { printf '%s' "$1" | LC_ALL=C tr -c 'A-Za-z0-9.,:=_/ -' '_' | head -c 200; }

# "CHECK gpuN, CHECK gpuall, ..." from validate's textfile (nodebench_check_status ... 0).
failing_checks() {
  local file=$1 line check gpu list="" n=0 shown=0 item
  while IFS= read -r line; do
    check=$(sed -n 's/.*[{,]check="\([^"]*\)".*/\1/p' <<<"$line")
    gpu=$(sed -n 's/.*[{,]gpu="\([^"]*\)".*/\1/p' <<<"$line")
    [ -n "$check" ] || continue
    item=$(clean "$check gpu${gpu//,/-}")
    n=$((n + 1))
    if [ $(( ${#PREFIX} + ${#list} + ${#item} + 12 )) -le "$REASON_MAX" ]; then
      list+="${list:+, }$item"; shown=$((shown + 1))
    fi
  done < <(grep -E '^nodebench_check_status\{.*\} 0$' "$file" 2>/dev/null)
  [ "$shown" -lt "$n" ] && list+=", $((n - shown)) more"
  echo "$list"
}

write_own_metrics() {  # STATUS (0 pass, 1 fail, 3 error), LEVEL
  [ -n "$prom" ] || return 0
  local f
  f="$(dirname "$prom")/nodebench_healthcheck.prom"
  {
    echo "# HELP nodebench_healthcheck_status Last health check: 0 pass, 1 a check failed, 3 the check could not run or timed out."
    echo "# TYPE nodebench_healthcheck_status gauge"
    echo "nodebench_healthcheck_status{level=\"$2\"} $1"
    echo "# HELP nodebench_healthcheck_timestamp_seconds Unix time the last health check finished."
    echo "# TYPE nodebench_healthcheck_timestamp_seconds gauge"
    echo "nodebench_healthcheck_timestamp_seconds $(date +%s)"
  } > "$f.tmp.$$" 2>/dev/null
  mv -f "$f.tmp.$$" "$f" 2>/dev/null || log "cannot write $f"
}

# The check could not run: say so, drain unless --on-error ignore.
fail_to_run() {  # WHAT (already clean), LEVEL, [timeout]
  local kind=${3:-error} reason
  reason="$PREFIX $kind: $1"
  reason=${reason:0:$REASON_MAX}
  log "the check could not run: $1"
  write_own_metrics 3 "$2"
  if [ "$on_error" = drain ] || [ "$kind" = timeout ]; then
    drain "$reason" || exit 4
  elif [ "$predrained" = 1 ]; then
    resume || exit 4  # the drain for the heavy run is not left behind
  fi
  exit 3
}

# ---- The run --------------------------------------------------------------------------------
predrained=0
# slurmd may start this with a short PATH.
PATH=$PATH:/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin
if [ "$no_drain" = 0 ] && ! command -v scontrol > /dev/null; then
  log "scontrol is not on PATH ($PATH): cannot drain or resume $node"
  exit 4
fi
if ! mkdir -p "$state_dir" 2>/dev/null || ! [ -w "$state_dir" ]; then
  fail_to_run "state folder $(clean "$state_dir") not writable" 1
fi
exec 9>>"$state_dir/lock" || fail_to_run "cannot open the lock in $(clean "$state_dir")" 1
if ! flock -w "$lock_wait" 9; then
  log "another health check holds $state_dir/lock: nothing done"
  exit 0
fi

if [ -z "$nodebench" ]; then
  nodebench=$(command -v nodebench 2>/dev/null) || nodebench=$repo/build/nodebench
fi
[ -e "$nodebench" ] || fail_to_run "nodebench not found at $(clean "$nodebench")" 1
[ -x "$nodebench" ] || fail_to_run "nodebench not executable at $(clean "$nodebench")" 1

level=1 limit=$timeout_s
now=$(date +%s)
last_heavy=$(cat "$state_dir/last-heavy" 2>/dev/null) || last_heavy=0
is_uint "$last_heavy" || last_heavy=0
if [ -n "$force_level" ]; then
  level=$force_level
  [ "$level" = 1 ] || limit=$heavy_timeout_s
elif [ "$heavy_every" -gt 0 ] && [ $((now - last_heavy)) -ge "$heavy_every" ]; then
  if [ "$no_drain" = 1 ] || { read_node && [[ $node_state == IDLE* ]]; }; then
    level=$heavy_level limit=$heavy_timeout_s
  else
    log "the level $heavy_level check is due but $node is ${node_state:-unknown}: level 1 now, level $heavy_level when it is idle"
  fi
fi

# A level 2 or 3 run benchmarks the GPUs: drain the node for its length, so that no job lands
# beside it (a pass resumes it, as any drain of this script; so does the next pass after a run
# that slurmd killed).
predrained=0
if [ "$level" -gt 1 ] && [ "$heavy_drain" = 1 ] && [ "$no_drain" = 0 ]; then
  drain "$PREFIX level $level check running" || exit 4
  predrained=1
fi

work=$(mktemp -d "$state_dir/run.XXXXXX") || fail_to_run "cannot make a folder in $(clean "$state_dir")" "$level"
trap 'rm -rf "$work"' EXIT
log "nodebench validate --level $level on $node (limit ${limit}s)"
timeout -k 10 "$limit" "$nodebench" validate --level "$level" --quiet --out "$work" \
  --prometheus "$work/validate.prom" > "$work/validate.txt" 2>&1
rc=$?
cp -f "$work/validate.txt" "$state_dir/last-validate.txt" 2>/dev/null
for f in "$work"/nodebench-validate-*.json; do [ -e "$f" ] && cp -f "$f" "$state_dir/last-validate.json"; done
if [ -s "$work/validate.prom" ]; then
  cp -f "$work/validate.prom" "$state_dir/last-validate.prom"
  if [ -n "$prom" ]; then
    if ! { cp -f "$work/validate.prom" "$prom.tmp.$$" && mv -f "$prom.tmp.$$" "$prom"; }; then log "cannot write $prom"; fi
  fi
fi
[ "$level" -gt 1 ] && [ "$rc" -le 1 ] && date +%s > "$state_dir/last-heavy"

case "$rc" in
  0)
    log "PASS (level $level)"
    write_own_metrics 0 "$level"
    resume || exit 4
    exit 0 ;;
  1|3)
    checks=$(failing_checks "$work/validate.prom")
    [ -n "$checks" ] || checks="validate level $level exit $rc"
    [ "$rc" = 3 ] && [[ $checks != *gpu.visibility* ]] && checks="no usable GPU, $checks"
    reason="$PREFIX $checks"
    log "FAIL (level $level): $checks"
    tail -n 20 "$work/validate.txt" | sed "s/^/$prog:   /"
    write_own_metrics 1 "$level"
    drain "${reason:0:$REASON_MAX}" || exit 4
    exit 1 ;;
  124|137)
    fail_to_run "validate level $level over ${limit}s" "$level" timeout ;;
  2)
    tail -n 5 "$work/validate.txt" | sed "s/^/$prog:   /"
    fail_to_run "validate level $level bad usage exit 2" "$level" ;;
  126|127)
    fail_to_run "nodebench could not be started exit $rc" "$level" ;;
  *)
    tail -n 5 "$work/validate.txt" | sed "s/^/$prog:   /"
    fail_to_run "validate level $level exit $rc" "$level" ;;
esac
