#!/usr/bin/env bash
# The Slurm health check (scripts/nodebench-healthcheck.sh) end to end against a real slurmctld
# and slurmd on this machine (tests/scripts/slurm_cluster.sh: one throw-away cluster for the whole
# file, stopped at the end, also on failure), with a stand-in nodebench
# (tests/scripts/healthcheck_fake_nodebench.sh) that plants the verdicts, and, where this machine
# has no GPU, the real binary. Every state change is awaited by polling sinfo with a deadline.
# Skipped, with the reason, where slurm-wlm and munge are not installed or root is not at hand.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo" || exit 1

for b in slurmctld slurmd munged scontrol sinfo flock timeout python3; do
  if ! PATH=$PATH:/usr/sbin command -v "$b" > /dev/null; then
    echo "healthcheck_test: SKIP: $b is not installed (apt-get install slurm-wlm munge)"
    exit 0
  fi
done
if [ "$(id -u)" != 0 ]; then
  if sudo -n true 2>/dev/null; then exec sudo -n bash "$0" "$@"; fi
  echo "healthcheck_test: SKIP: slurmd must run as root, and sudo asks for a password"
  exit 0
fi

# Bad usage: exit 2 with a message naming the input, before anything is touched.
usage_case() {  # TEXT WANTED, ARGS...
  local want=$1 out rc; shift
  out=$(bash scripts/nodebench-healthcheck.sh --node node1 "$@" 2>&1); rc=$?
  if [ $rc = 2 ] && [[ $out == *"$want"* ]]; then echo "ok   - $*: exit 2, says so"
  else echo "FAIL - $*: exit $rc, '$out'"; usage_failed=1; fi
}
usage_case "--level must be 1, 2 or 3" --level 4
usage_case "--timeout must be a whole number" --timeout 5s
usage_case "--heavy-every must be a whole number" --heavy-every -1
usage_case "--on-error must be drain or ignore" --on-error maybe
usage_case "'/nonexistent/slurm.conf' is not a readable file" --slurm-conf /nonexistent/slurm.conf
usage_case "'a;b' is not a Slurm node name" --node 'a;b'
usage_case "unknown argument '--frobnicate'" --frobnicate
[ -z "${usage_failed:-}" ] || exit 1

tmp=$(mktemp -d /tmp/nodebench-hc-test.XXXXXX)
chmod 0755 "$tmp"
# shellcheck source=tests/scripts/slurm_cluster.sh
source "$repo/tests/scripts/slurm_cluster.sh"
cleanup() { slurm_cluster_stop; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

failures=0
ok() { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; failures=$((failures + 1)); }

# The stand-in nodebench and its control folder.
fake=$tmp/fake
mkdir -p "$fake" "$tmp/bin"
cat > "$tmp/bin/nodebench" <<EOF
#!/bin/sh
FAKE_HC_DIR=$fake FAKE_HC_REAL=$repo/build/nodebench exec bash $repo/tests/scripts/healthcheck_fake_nodebench.sh "\$@"
EOF
chmod +x "$tmp/bin/nodebench"
mode() { echo "$1" > "$fake/mode"; : > "$fake/calls.log"; rm -f "$fake/started" "$fake/open"; }
mode pass

# slurmd's own HealthCheckProgram: does nothing until the last case arms it.
cat > "$tmp/hc-program" <<EOF
#!/bin/sh
[ -e $tmp/hc-armed ] || exit 0
exec bash $repo/scripts/nodebench-healthcheck.sh --nodebench $tmp/bin/nodebench --state-dir $tmp/hc-state >> $tmp/hc-program.log 2>&1
EOF
chmod 0755 "$tmp/hc-program"

# And its Prolog: the same, armed by its own file.
cat > "$tmp/prolog" <<EOF
#!/bin/sh
[ -e $tmp/prolog-armed ] || exit 0
exec bash $repo/scripts/nodebench-healthcheck.sh --nodebench $tmp/bin/nodebench --state-dir $tmp/prolog-state >> $tmp/prolog.log 2>&1
EOF
chmod 0755 "$tmp/prolog"

t0=$(date +%s.%N)
if ! slurm_cluster_start "$tmp/slurm" "HealthCheckProgram=$tmp/hc-program
HealthCheckInterval=1
HealthCheckNodeState=IDLE
Prolog=$tmp/prolog
PrologFlags=Alloc"; then
  echo "FAIL - the throw-away Slurm cluster did not start"
  exit 1
fi
echo "healthcheck_test: Slurm up in $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s"
conf=$SLURM_CONF

# The script as an admin or a Prolog would call it, but without SLURM_CONF in the environment.
hc() {
  env -u SLURM_CONF SLURMD_NODENAME=node1 bash "$repo/scripts/nodebench-healthcheck.sh" \
    --nodebench "$tmp/bin/nodebench" --state-dir "$tmp/state" --slurm-conf "$conf" "$@" > "$tmp/hc.out" 2>&1
}
show() { sed 's/^/     | /' "$tmp/hc.out"; }
# "STATE|REASON" of node1, e.g. "drained|nodebench-hc: ecc.errors gpu0" or "idle|none".
now_state() { sinfo -h -N -n node1 -o '%T|%E' | head -n 1; }
# Waits up to 15 s for node1 to read exactly WANT; the last reading in $seen.
await() {
  local want=$1 deadline=$(( $(date +%s) + 15 ))
  while :; do
    seen=$(now_state)
    [ "$seen" = "$want" ] && return 0
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
expect() {  # WHAT, RC wanted, RC got, STATE|REASON wanted
  if [ "$3" = "$2" ] && await "$4"; then ok "$1 (exit $3; $4)"
  else bad "$1: wanted exit $2 and '$4', got exit $3 and '$seen'"; show; fi
}
admin_resume() { scontrol update NodeName=node1 State=RESUME > /dev/null 2>&1; await "idle|none"; }

ECC="nodebench-hc: ecc.errors gpu0, ecc.retired gpu0"

# 1. A passing node is left idle.
mode pass; hc; expect "a passing check leaves the node idle" 0 $? "idle|none"

# 2. A planted failing check drains the node with the failing checks as the reason.
mode ecc; hc; expect "ECC errors drain the node" 1 $? "drained|$ECC"
grep -q -- '--level 1' "$fake/calls.log" || bad "the fast check was not level 1: $(cat "$fake/calls.log")"

# 3. The same failure again changes nothing; a pass resumes the node the script drained.
mode ecc; hc; expect "a second failure keeps the drain" 1 $? "drained|$ECC"
mode pass; hc; expect "a later pass resumes the node" 0 $? "idle|none"

# 4. An admin's drain stays: a failure does not rewrite its reason, a pass does not resume it.
scontrol update NodeName=node1 State=DRAIN Reason="admin: DIMM swap"
await "drained|admin: DIMM swap" || bad "the admin drain did not take: $seen"
mode ecc; hc; expect "a failure leaves an admin's reason" 1 $? "drained|admin: DIMM swap"
mode pass; hc; expect "a pass does not resume an admin's drain" 0 $? "drained|admin: DIMM swap"
grep -q "drained by someone else" "$tmp/hc.out" || { bad "the pass did not say why the node stays drained"; show; }
admin_resume || bad "the admin could not resume: $seen"

# 5. Measured text with shell metacharacters never reaches the reason; the reason stays short.
mode many; hc; rc=$?
await "drained|nodebench-hc: x_ gpu0, pcie.link gpu0, pcie.link gpu1, pcie.link gpu2, pcie.link gpu3, pcie.link gpu4, 7 more"
reason=${seen#*|}
if [ $rc = 1 ] && [[ $reason =~ ^nodebench-hc:\ [A-Za-z0-9.,:=_/\ -]+$ ]] && [ ${#reason} -le 120 ] && [[ $reason == *", 7 more" ]]; then
  ok "thirteen failures, one named with metacharacters: '$reason' (${#reason} characters)"
else
  bad "unsafe or long reason (exit $rc): '$reason'"; show
fi
mode pass; hc; expect "and a pass resumes it" 0 $? "idle|none"

# 6. The script's own failures say so in the reason, and --on-error ignore does not drain.
mode pass; hc --nodebench "$tmp/no-such-nodebench"
expect "a missing binary drains saying so" 3 $? "drained|nodebench-hc: error: nodebench not found at $tmp/no-such-nodebench"
mode pass; hc; expect "a pass after it resumes" 0 $? "idle|none"
hc --nodebench "$tmp/no-such-nodebench" --on-error ignore
expect "--on-error ignore: a missing binary does not drain" 3 $? "idle|none"
touch "$tmp/not-executable"
hc --nodebench "$tmp/not-executable" --on-error ignore
expect "--on-error ignore: a binary without the x bit does not drain" 3 $? "idle|none"
mode crash; hc; expect "a crash of nodebench drains saying so" 3 $? "drained|nodebench-hc: error: validate level 1 exit 139"
mode usage; hc; expect "a usage error of nodebench drains saying so" 3 $? "drained|nodebench-hc: error: validate level 1 bad usage exit 2"
mode pass; hc; expect "a pass resumes" 0 $? "idle|none"

# 7. A hung check is stopped at its time limit (the stand-in never ends) and drains saying so.
mode hang; hc --timeout 1; expect "a hung check drains at --timeout" 3 $? "drained|nodebench-hc: timeout: validate level 1 over 1s"
mode pass; hc; expect "a pass resumes" 0 $? "idle|none"

# 8. Two checks at once: the second finds the lock held and does nothing; one waiting for the
#    lock runs after the first has ended, never beside it.
mode gate
hc & first=$!
slurm_wait_for 15 test -e "$fake/started" || bad "the first check did not start"
cp "$tmp/hc.out" "$tmp/hc.first" 2>/dev/null
env -u SLURM_CONF SLURMD_NODENAME=node1 bash "$repo/scripts/nodebench-healthcheck.sh" \
  --nodebench "$tmp/bin/nodebench" --state-dir "$tmp/state" --slurm-conf "$conf" > "$tmp/hc.second" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "another health check holds" "$tmp/hc.second" && [ "$(grep -c '^start' "$fake/calls.log")" = 1 ]; then
  ok "a second check while one runs does nothing (exit 0)"
else
  bad "the second check ran beside the first (exit $rc): $(cat "$tmp/hc.second") / $(cat "$fake/calls.log")"
fi
env -u SLURM_CONF SLURMD_NODENAME=node1 bash "$repo/scripts/nodebench-healthcheck.sh" --lock-wait 60 \
  --nodebench "$tmp/bin/nodebench" --state-dir "$tmp/state" --slurm-conf "$conf" > "$tmp/hc.third" 2>&1 & third=$!
# The third is waiting on the lock: it has not called nodebench while the first holds it.
touch "$fake/open"
wait $first; rc1=$?
wait $third; rc3=$?
order=$(tr '\n' ';' < "$fake/calls.log" | sed 's/start [^;]*/start/g')
if [ $rc1 = 1 ] && [ $rc3 = 1 ] && [ "$order" = "start;end;start;end;" ] && await "drained|$ECC"; then
  ok "a check waiting with --lock-wait runs after the first, never beside it ($order)"
else
  bad "overlapping checks: exits $rc1 and $rc3, calls '$order', node '$seen'"
fi
mode pass; hc; expect "a pass resumes" 0 $? "idle|none"

# 9. The heavy level on the admin's schedule: due on the first call, not on the next; never
#    while a job runs.
rm -f "$tmp/state/last-heavy"
mode pass; hc --heavy-every 3600; rc=$?
grep -q -- '--level 2' "$fake/calls.log" && [ $rc = 0 ] && ok "the heavy level runs when due" ||
  bad "the heavy level did not run when due (exit $rc): $(cat "$fake/calls.log")"
mode pass; hc --heavy-every 3600
grep -q -- '--level 1' "$fake/calls.log" && ok "and not again before --heavy-every has passed" ||
  bad "the heavy level ran again: $(cat "$fake/calls.log")"
# While the heavy level runs the node is drained (no job lands beside the benchmarks); its pass
# resumes it. The stand-in holds the run until the drain has been seen.
rm -f "$tmp/state/last-heavy"
mode gate; hc --heavy-every 3600 & heavy=$!
slurm_wait_for 15 test -e "$fake/started" || bad "the heavy check did not start"
if await "drained|nodebench-hc: level 2 check running"; then ok "the node is drained while the level 2 check runs"
else bad "the node is not drained during the level 2 check: '$seen'"; fi
echo pass > "$fake/open"
wait $heavy; rc=$?
expect "and its pass resumes it" 0 $rc "idle|none"
rm -f "$tmp/state/last-heavy"
mode gate; hc --heavy-every 3600 --no-heavy-drain & heavy=$!
slurm_wait_for 15 test -e "$fake/started" || bad "the heavy check did not start"
seen=$(now_state)
[ "$seen" = "idle|none" ] && ok "--no-heavy-drain leaves the node up while it runs" || bad "--no-heavy-drain: '$seen'"
echo pass > "$fake/open"
wait $heavy
rm -f "$tmp/state/last-heavy"
mode crash; hc --heavy-every 3600 --on-error ignore
expect "--on-error ignore: a heavy check that crashes leaves no drain behind" 3 $? "idle|none"
rm -f "$tmp/state/last-heavy"
job=$(sbatch --parsable -o /dev/null --wrap 'sleep 300' 2>&1)
if await "allocated|none"; then
  mode pass; hc --heavy-every 3600
  grep -q -- '--level 1' "$fake/calls.log" && grep -q "level 2 when it is idle" "$tmp/hc.out" &&
    ok "a due heavy level waits while a job runs" || { bad "the heavy level ran beside a job: $(cat "$fake/calls.log")"; show; }
else
  bad "the job did not start ($job): $seen"
fi
scancel "$job" 2>/dev/null
await "idle|none" || bad "the node did not come back after the job: $seen"

# 10. --prometheus: validate's textfile goes to FILE whole, the script's own status beside it.
mkdir -p "$tmp/textfile"
mode ecc; hc --prometheus "$tmp/textfile/nodebench.prom"; rc=$?
own=$tmp/textfile/nodebench_healthcheck.prom
if [ $rc = 1 ] && cmp -s "$tmp/textfile/nodebench.prom" tests/data/healthcheck/ecc.prom &&
   grep -qx 'nodebench_healthcheck_status{level="1"} 1' "$own" &&
   grep -qE '^nodebench_healthcheck_timestamp_seconds [0-9]+$' "$own" &&
   [ -z "$(find "$tmp/textfile" -name '*.tmp.*')" ]; then
  ok "--prometheus writes validate's textfile and the script's status (1)"
else
  bad "--prometheus (exit $rc): $(ls "$tmp/textfile"; cat "$own" 2>&1)"
fi
if command -v promtool > /dev/null; then
  promtool check metrics < "$own" > "$tmp/lint" 2>&1 && ok "promtool check metrics accepts the script's textfile" ||
    bad "promtool check metrics: $(cat "$tmp/lint")"
fi
mode pass; hc --prometheus "$tmp/textfile/nodebench.prom"
grep -qx 'nodebench_healthcheck_status{level="1"} 0' "$own" && await "idle|none" &&
  ok "and after a pass, status 0 and the node resumed" || bad "after a pass: $(cat "$own") / $seen"

# 11. scontrol cannot act on the node: exit 4.
mode ecc; hc --node no-such-node; rc=$?
[ $rc = 4 ] && ok "an unknown node: exit 4" || { bad "an unknown node: exit $rc"; show; }

# 12. The real binary, where this machine has no GPU: its own textfile names the failing checks.
if [ -x build/nodebench ]; then
  timeout 60 build/nodebench validate --level 1 --quiet --out "$tmp/real" --prometheus "$tmp/real.prom" > /dev/null 2>&1
  real_rc=$?
  if [ $real_rc = 3 ]; then
    mode real; hc; rc=$?
    reason=$(now_state); reason=${reason#*|}
    if [ $rc = 1 ] && [[ $reason == "nodebench-hc: "*gpu.visibility\ gpuall* ]]; then
      ok "the real nodebench without a GPU drains with its failing checks: '$reason'"
    else
      bad "the real nodebench without a GPU: exit $rc, reason '$reason'"; show
    fi
    admin_resume || bad "could not resume after the real binary's case: $seen"
  else
    echo "skip - the real binary's case: validate exits $real_rc here (it needs a machine without a GPU)"
  fi
else
  echo "skip - the real binary's case: build/nodebench is not built"
fi

# 13. As a Prolog: a failing node is drained with the script's reason before the job starts,
#     and the job goes back to the queue (Slurm requeues it, held, on a Prolog's non-zero exit).
mode ecc; touch "$tmp/prolog-armed"
job=$(sbatch --parsable -o /dev/null --wrap 'true' 2>&1)
job_held() { squeue -h -j "$job" -o '%T|%r' | grep -q '^PENDING|launch failed requeued held'; }
if await "drained|$ECC" && slurm_wait_for 15 job_held; then
  ok "as a Prolog it drains with its reason, and the job is requeued ($(squeue -h -j "$job" -o '%T %r'))"
else
  bad "as a Prolog: node '$seen', job '$(squeue -h -j "$job" -o '%T %r' 2>&1)'"; cat "$tmp/prolog.log" 2>/dev/null
fi
rm -f "$tmp/prolog-armed"
scancel "$job" 2>/dev/null
mode pass; hc; expect "a pass resumes the node the Prolog drained" 0 $? "idle|none"

# 14. slurmd's HealthCheckProgram (no SLURM_CONF: the script finds slurmd's -f) drains, then
#     resumes: with HealthCheckNodeState=IDLE, as README advises, a drained idle node is still checked.
mode ecc; touch "$tmp/hc-armed"
if await "drained|$ECC"; then ok "slurmd's HealthCheckProgram drains the failing node"
else bad "HealthCheckProgram did not drain: '$seen'"; tail -n 20 "$tmp/hc-program.log" 2>/dev/null; fi
mode pass
if await "idle|none"; then ok "and resumes it once it passes"
else bad "HealthCheckProgram did not resume: '$seen'"; tail -n 20 "$tmp/hc-program.log" 2>/dev/null; fi
rm -f "$tmp/hc-armed"

echo "healthcheck_test: sinfo -R now: $(sinfo -h -R -o '%N|%T|%E' | tr '\n' ' ')"
if [ $failures = 0 ]; then echo "healthcheck_test: all passed"; exit 0; fi
echo "healthcheck_test: $failures failed"
exit 1
