"""A throw-away PostgreSQL server for the history tests: Debian's ``postgresql`` package
(``/usr/lib/postgresql/NN/bin``: initdb, pg_ctl), in a temporary folder, listening on a unix
socket in that folder only (no TCP port), trust authentication, fsync off; stopped and removed
at the end of the test session.

initdb refuses to run as root: as root, the server's commands run as the ``postgres`` user that
the Debian package creates (else ``nobody``), through ``runuser``, and the folder belongs to
that user.

When the server cannot be had (no package, no psycopg, initdb failed), :func:`unavailable`
says why and the PostgreSQL tests are skipped with that reason, unless NODEBENCH_TEST_POSTGRES
is ``required`` (scripts/test.sh sets it once it has installed PostgreSQL): then they fail.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile

SOCKET_PORT = 54329          # names the socket file only: the server listens on no TCP port
SUPERUSER = "nodebench"


def required() -> bool:
    return os.environ.get("NODEBENCH_TEST_POSTGRES", "").lower() == "required"


def find_bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


class PgServer:
    """`base`: the folder to use (default: a new one under the temporary folder); `extra_conf`:
    lines appended to postgresql.conf (scripts/dev/facts/history_scale.py gives it more memory)."""

    def __init__(self, base: str | None = None, extra_conf: str = ""):
        self.base, self.extra_conf = base, extra_conf
        self.bindir = self.user = None
        self.running = False
        self._n = 0
        self._admin = None

    def _run(self, *cmd, timeout=120):
        cmd = [os.path.join(self.bindir, cmd[0]), *cmd[1:]]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.base)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-800:]}")
        return proc

    def start(self) -> None:
        import psycopg  # noqa: F401  (raises ImportError: the caller turns it into a skip)

        self.bindir = find_bindir()
        if not self.bindir:
            raise RuntimeError("PostgreSQL's server binaries (initdb, pg_ctl) are not installed "
                               "(apt-get install postgresql)")
        if self.base:
            os.makedirs(self.base, exist_ok=True)
        else:
            self.base = tempfile.mkdtemp(prefix="nodebench-pg-")
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    pw = pwd.getpwnam(name)
                except KeyError:
                    continue
                self.user = name
                os.chown(self.base, pw.pw_uid, pw.pw_gid)
                break
            else:
                raise RuntimeError("running as root and neither user 'postgres' nor 'nobody' exists for initdb")
        data = os.path.join(self.base, "data")
        self._run("initdb", "-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
        conf = (f"listen_addresses = ''\nunix_socket_directories = '{self.base}'\nport = {SOCKET_PORT}\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 60\n"
                "shared_buffers = 64MB\n" + self.extra_conf)
        with open(os.path.join(data, "postgresql.conf"), "a", encoding="utf-8") as fh:
            fh.write(conf)
        self._run("pg_ctl", "-D", data, "-l", os.path.join(self.base, "server.log"), "-w", "-t", "60", "start")
        self.running = True

    def url(self, dbname: str) -> str:
        return f"postgresql:///{dbname}?host={self.base}&port={SOCKET_PORT}&user={SUPERUSER}"

    def new_database(self, prefix: str = "t") -> str:
        """A new empty database; its URL."""
        import psycopg

        if self._admin is None or self._admin.closed:
            self._admin = psycopg.connect(self.url("postgres"), autocommit=True)
        self._n += 1
        name = f"{prefix}_{os.getpid()}_{self._n}"
        self._admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
        if self.running:
            try:
                self._run("pg_ctl", "-D", os.path.join(self.base, "data"), "-m", "fast", "-w", "stop", timeout=60)
            except Exception:
                pass
            self.running = False
        if self.base:
            shutil.rmtree(self.base, ignore_errors=True)


def start_or_reason():
    """(server, None) or (None, why it could not be started)."""
    server = PgServer()
    try:
        server.start()
    except ImportError:
        server.stop()
        return None, "psycopg 3 is not installed (python3 -m pip install 'psycopg[binary]')"
    except Exception as exc:  # noqa: BLE001 - any reason is reported as the skip's reason
        server.stop()
        return None, f"could not start a PostgreSQL server: {exc}"
    return server, None
