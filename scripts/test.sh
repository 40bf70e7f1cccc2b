#!/usr/bin/env bash
# The tests on a fresh machine (no GPU needed): install what is missing, build, run the C++ unit
# and CLI tests, the tests of the set-up script and of the packages (.deb, .tar.gz, the reports
# wheel), the Slurm health check against a throw-away Slurm cluster and the Prometheus alerting
# rules (slurm-wlm, munge and prometheus are installed when missing), `nodebench frameworks` on a
# real tensorflow-cpu (pip, into a virtual environment kept in ~/.cache/nodebench-tfcpu), the reporting package's
# tests (the history ones on SQLite and on a throw-away PostgreSQL server: postgresql and psycopg
# are installed when missing), and the CUDA 12 / sm_61 build check (skip that one with
# NODEBENCH_SKIP_CUDA12=1; its first run downloads about 2.4 GB, see README.md).
# GPU tests are separate: ctest --test-dir build -L gpu
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
status=0
bash scripts/setup.sh --for tests || exit 1
# The report tests render the HTML page in headless Chromium (Debian's package); without it that
# one test is skipped, and the rest run.
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  if command -v apt-get >/dev/null 2>&1 &&
     $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq &&
     DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq chromium > /dev/null; then
    echo "test.sh: installed chromium"
  else
    echo "test.sh: SKIP the browser test: chromium could not be installed (apt-get install chromium)"
  fi
fi
# The history tests run on SQLite and on PostgreSQL: a throw-away server from Debian's postgresql
# package (reports/tests/pgserver.py) reached through psycopg 3 (the reports[postgres] extra).
# Once both are here the PostgreSQL tests must run (NODEBENCH_TEST_POSTGRES=required: a server
# that does not start fails them); where they cannot be installed they are skipped, with the reason.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  if command -v apt-get >/dev/null 2>&1 &&
     $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq &&
     DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq postgresql > /dev/null; then
    echo "test.sh: installed postgresql"
  else
    echo "test.sh: postgresql could not be installed (apt-get install postgresql): the PostgreSQL history tests will be skipped"
  fi
fi
if ! python3 -c 'import psycopg' >/dev/null 2>&1; then
  if python3 -m pip install -q --disable-pip-version-check 'psycopg[binary]>=3.1'; then
    echo "test.sh: installed psycopg"
  else
    echo "test.sh: psycopg could not be installed (pip install 'psycopg[binary]'): the PostgreSQL history tests will be skipped"
  fi
fi
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && python3 -c 'import psycopg' >/dev/null 2>&1; then
  export NODEBENCH_TEST_POSTGRES=required
fi
# The Slurm health check's test runs a throw-away slurmctld and slurmd (Debian's slurm-wlm, munge);
# the Prometheus rules are checked with promtool (Debian's prometheus). Installed when missing;
# where they cannot be, those tests are skipped with the reason.
if ! [ -x /usr/sbin/slurmctld ] || ! [ -x /usr/sbin/munged ] || ! command -v promtool >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  if command -v apt-get >/dev/null 2>&1 &&
     $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq &&
     DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq slurm-wlm munge prometheus > /dev/null; then
    echo "test.sh: installed slurm-wlm, munge and prometheus"
  else
    echo "test.sh: slurm-wlm, munge or prometheus could not be installed (apt-get install slurm-wlm munge prometheus): the health-check and alert-rule tests will be skipped"
  fi
fi
bash scripts/build.sh || exit 1
echo "== C++ unit and CLI tests (ctest -LE gpu)"
ctest --test-dir build -LE gpu --output-on-failure || status=1
echo "== scripts: syntax, shellcheck, the GPU session script's steps (tests/scripts/scripts_test.sh)"
bash tests/scripts/scripts_test.sh || status=1
echo "== Slurm health check against a throw-away slurmctld and slurmd (tests/scripts/healthcheck_test.sh)"
bash tests/scripts/healthcheck_test.sh || status=1
echo "== Prometheus alerting rules: promtool check rules, promtool test rules (scripts/prometheus/)"
if command -v promtool >/dev/null 2>&1; then
  promtool check rules scripts/prometheus/nodebench.rules.yml || status=1
  promtool test rules scripts/prometheus/nodebench.rules.test.yml || status=1
else
  echo "test.sh: SKIP the alerting rules' tests: promtool is not installed (apt-get install prometheus)"
fi
echo "== set-up script (tests/scripts/setup_test.sh)"
bash tests/scripts/setup_test.sh || status=1
echo "== packages: .deb, .tar.gz, reports wheel (tests/scripts/package_test.sh)"
bash tests/scripts/package_test.sh build || status=1
echo "== nodebench frameworks on a real TensorFlow (tensorflow-cpu in a virtual environment; tests/scripts/frameworks_tf_test.sh)"
bash tests/scripts/frameworks_tf_test.sh build || status=1
echo "== reporting package tests (pytest)"
python3 -m pytest reports/tests -q -rs || status=1
if [ "${NODEBENCH_SKIP_CUDA12:-0}" != 1 ]; then
  echo "== CUDA 12 build for sm_61 (P40) and machine-code check (NODEBENCH_SKIP_CUDA12=1 skips it)"
  bash scripts/dev/checks/ci-cuda12.sh || status=1
fi
if [ $status = 0 ]; then echo "ALL TESTS PASSED"; else echo "SOME TESTS FAILED"; fi
exit $status
