#!/usr/bin/env bash
# A stand-in for nodebench in tests/scripts/healthcheck_test.sh: `validate ... --prometheus FILE`
# answers as the file $FAKE_HC_DIR/mode says, and logs "start ARGS" / "end" lines to
# $FAKE_HC_DIR/calls.log:
#   pass | ecc | many   write tests/data/healthcheck/MODE.prom to FILE; exit 0, 1, 1
#   gate                touch $FAKE_HC_DIR/started, wait for $FAKE_HC_DIR/open, then answer as
#                       the mode in $FAKE_HC_DIR/open says (pass or ecc)
#   hang                never end (the caller's time limit must stop it)
#   crash               die of SIGSEGV
#   usage               exit 2, as nodebench does on bad usage
#   real                run the real binary, $FAKE_HC_REAL, with the same arguments
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
data=$here/../data/healthcheck
mode=$(cat "$FAKE_HC_DIR/mode")
echo "start $*" >> "$FAKE_HC_DIR/calls.log"
[ "${1:-}" = validate ] || { echo "fake nodebench: only validate" >&2; exit 2; }
args=("$@")
prom=""
while [ $# -gt 0 ]; do
  case "$1" in --prometheus) prom=$2; shift 2 ;; *) shift ;; esac
done
[ -n "$prom" ] || { echo "fake nodebench: no --prometheus" >&2; exit 2; }
answer() {  # MODE.prom, exit code
  cp "$data/$1.prom" "$prom"
  echo "VERDICT: fake $1"
  echo "end" >> "$FAKE_HC_DIR/calls.log"
  exit "$2"
}
case "$mode" in
  pass) answer pass 0 ;;
  ecc) answer ecc 1 ;;
  many) answer many 1 ;;
  gate)
    touch "$FAKE_HC_DIR/started"
    for _ in $(seq 600); do
      if [ -e "$FAKE_HC_DIR/open" ]; then
        case "$(cat "$FAKE_HC_DIR/open")" in pass) answer pass 0 ;; *) answer ecc 1 ;; esac
      fi
      sleep 0.1
    done
    echo "fake nodebench: the gate never opened" >&2; exit 5 ;;
  hang) exec sleep 600 ;;
  crash) kill -SEGV $$ ;;
  usage) echo "nodebench: bad usage (fake)" >&2; exit 2 ;;
  real) exec "$FAKE_HC_REAL" "${args[@]}" ;;
  *) echo "fake nodebench: unknown mode '$mode'" >&2; exit 2 ;;
esac
