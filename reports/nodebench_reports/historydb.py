"""Where a history lives: an SQLite file (the default) or a PostgreSQL database, behind one small
dialect layer, so that ``history.py`` writes each query once.

* A path is an SQLite file (python's built-in ``sqlite3``; nothing to set up). Writers take the
  database's write lock for a whole transaction (``BEGIN IMMEDIATE``) and wait up to
  :data:`SQLITE_BUSY_TIMEOUT_S` for another writer.
* A ``postgresql://`` or ``postgres://`` URL is a PostgreSQL database, reached through psycopg 3
  (the optional extra ``nodebench-reports[postgres]``). The URL is handed to libpq as it is, so
  its host, port, user, ``?service=NAME`` and the PG* environment variables (PGPASSWORD,
  PGPASSFILE, PGSERVICEFILE, ...) work as in psql. A URL that embeds a password is refused: a
  password belongs in the environment, ~/.pgpass or a service file, never on a command line
  or in a result file. Writers serialise on transaction-scoped advisory locks.

What differs between the two, and nothing else: the placeholder (``?`` / ``%s``), how a write
transaction starts and locks, the list of tables, and the errors. Column types are written
so that both read them alike (``TEXT``, ``INTEGER``, ``DOUBLE PRECISION``); upserts use
``INSERT ... ON CONFLICT (...) DO UPDATE``, which both know.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import time
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlsplit

from .errors import ReportError

URL_PREFIXES = ("postgresql://", "postgres://")
SQLITE_BUSY_TIMEOUT_S = 60.0
PG_CONNECT_TIMEOUT_S = 10
EXIT_UNAVAILABLE = 3
_RETRIES = 5


class HistoryUnavailable(ReportError):
    """The history database could not be reached, or stayed busy: nothing was written. The
    command line exits with :data:`EXIT_UNAVAILABLE` (3), so that a caller can keep the input and
    try again later."""

    exit_code = EXIT_UNAVAILABLE


class _Retry(Exception):
    """A transaction lost a deadlock or serialisation race and may simply be run again."""


def is_url(target: str) -> bool:
    return isinstance(target, str) and target.lower().startswith(URL_PREFIXES)


def _url_password(url: str) -> bool:
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if ":" in userinfo:
        return True
    return any(k.lower() == "password" for k, _ in parse_qsl(parts.query, keep_blank_values=True))


def redact(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        if ":" in userinfo:
            netloc = f"{userinfo.split(':', 1)[0]}:***@{hosts}"
    query = "&".join(f"{k}=***" if k.lower() == "password" else f"{k}={v}"
                     for k, v in parse_qsl(parts.query, keep_blank_values=True))
    return parts._replace(netloc=netloc, query=query).geturl()


def check_url(url: str) -> None:
    """Refuse a URL that embeds a password (it would end up in shell history, ps, logs and the
    compare JSON); the message never shows the password."""
    if _url_password(url):
        raise ReportError(f"{redact(url)}: the database URL embeds a password; give it in PGPASSWORD, "
                          f"~/.pgpass (PGPASSFILE) or a libpq service file (postgresql:///?service=NAME, "
                          f"PGSERVICEFILE), never in the URL")


def lock_key(text: str) -> int:
    """A signed 64-bit advisory lock key for a name."""
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big", signed=True)


def _first_lines(exc: BaseException) -> str:
    return " ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip()) or type(exc).__name__


class HistoryDB:
    """One open history: ``execute``/``query``/``executemany`` take ``?`` placeholders on both
    backends; ``transaction(locks)`` is one write transaction, serialised against other writers
    that name one of the same locks (SQLite: against every writer)."""

    def __init__(self, conn, dialect: str, target: str):
        self.conn, self.dialect, self.target = conn, dialect, target
        self._in_tx = False
        self._locked: set[int] = set()

    # --- SQL --------------------------------------------------------------------------------
    def sql(self, query: str) -> str:
        """`query` with ? placeholders in this backend's form (psycopg: %s, and a literal % doubled).
        A ? inside a string literal would be taken for a placeholder: the queries pass values as
        arguments instead."""
        return query.replace("%", "%%").replace("?", "%s") if self.dialect == "postgresql" else query

    def execute(self, query: str, args=()):
        with self._errors():
            return self.conn.execute(self.sql(query), tuple(args))

    def query(self, query: str, args=()) -> list[tuple]:
        with self._errors():
            return [tuple(r) for r in self.conn.execute(self.sql(query), tuple(args)).fetchall()]

    def query_one(self, query: str, args=()):
        rows = self.query(query, args)
        return rows[0] if rows else None

    def executemany(self, query: str, rows) -> None:
        rows = list(rows)
        if not rows:
            return
        with self._errors():
            if self.dialect == "postgresql":
                with self.conn.cursor() as cur:
                    cur.executemany(self.sql(query), rows)
            else:
                self.conn.executemany(query, rows)

    def tables(self) -> set[str]:
        if self.dialect == "postgresql":
            sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        else:
            sql = "SELECT name FROM sqlite_master WHERE type='table'"
        return {r[0] for r in self.query(sql)}

    # --- transactions -----------------------------------------------------------------------
    @contextmanager
    def transaction(self, locks=()):
        """A write transaction, committed at the end of the block or rolled back whole.
        PostgreSQL: the advisory locks of `locks` (names) are taken first, in a fixed order;
        :meth:`lock` takes more inside. SQLite: BEGIN IMMEDIATE (the one write lock)."""
        if self._in_tx:
            raise RuntimeError("nested history transaction")
        self._in_tx, self._locked = True, set()
        try:
            if self.dialect == "postgresql":
                with self._errors(), self.conn.transaction():
                    self.lock(locks)
                    yield self
            else:
                with self._errors():
                    self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
                with self._errors():
                    self.conn.execute("COMMIT")
        finally:
            self._in_tx = False

    def lock(self, names) -> None:
        """Take the advisory locks of `names` (PostgreSQL; released at commit). Sorted, so that two
        writers asking for the same set never deadlock."""
        if self.dialect != "postgresql":
            return
        for key in sorted({lock_key(n) for n in names} - self._locked):
            self.execute("SELECT pg_advisory_xact_lock(?)", (key,))
            self._locked.add(key)

    def run_transaction(self, body, locks=()):
        """``body(self)`` in a transaction, run again (a few times) when PostgreSQL aborted it as a
        deadlock or serialisation failure."""
        for attempt in range(_RETRIES):
            try:
                with self.transaction(locks):
                    return body(self)
            except _Retry:
                if attempt == _RETRIES - 1:
                    raise HistoryUnavailable(f"{self.target}: gave up after {_RETRIES} deadlocks with other "
                                             f"writers") from None
                time.sleep(0.05 * (attempt + 1))
        return None

    # --- errors -----------------------------------------------------------------------------
    @contextmanager
    def _errors(self):
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise HistoryUnavailable(f"{self.target}: the database stayed locked by another writer for "
                                         f"{SQLITE_BUSY_TIMEOUT_S:g} s") from None
            if "unable to open" in text or "disk I/O" in text:
                raise HistoryUnavailable(f"{self.target}: {text}") from None
            raise ReportError(f"{self.target}: SQLite error: {text}") from None
        except sqlite3.DatabaseError as exc:
            raise ReportError(f"{self.target}: SQLite error: {exc}") from None
        except Exception as exc:
            pg = _psycopg_or_none()
            if pg is None or not isinstance(exc, pg.Error):
                raise
            if isinstance(exc, (pg.errors.DeadlockDetected, pg.errors.SerializationFailure)):
                raise _Retry() from None
            if isinstance(exc, pg.OperationalError):
                raise HistoryUnavailable(f"{self.target}: the PostgreSQL history failed: {_first_lines(exc)}") \
                    from None
            raise ReportError(f"{self.target}: PostgreSQL error: {_first_lines(exc)}") from None

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # closing a broken connection must not hide the error that broke it
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _psycopg_or_none():
    import sys
    return sys.modules.get("psycopg")


def import_psycopg():
    try:
        import psycopg
    except ImportError:
        raise ReportError("a postgresql:// history needs psycopg 3, which is not installed: "
                          "python3 -m pip install 'nodebench-reports[postgres]' (or 'psycopg[binary]'; "
                          "Debian: apt-get install python3-psycopg)") from None
    return psycopg


def connect(target: str, create: bool) -> HistoryDB:
    """Open the history named by `target` (a file path or a postgresql:// URL); raise ReportError
    (HistoryUnavailable when it cannot be reached). The schema is not checked here."""
    if not target.strip():
        raise ReportError("--db is empty: give an SQLite file or a postgresql:// URL (an empty name would be "
                          "SQLite's temporary database, gone when the command ends)")
    if is_url(target):
        return _connect_pg(target)
    keywords = _libpq_keywords(target)
    if keywords:   # never echoed: the string may hold a password
        raise ReportError(f"--db: a libpq keyword=value connection string (keywords {', '.join(keywords)}) is "
                          f"not a database this command takes, nor a file name; give a postgresql:// URL "
                          f"(postgresql://USER@HOST/DBNAME or postgresql:///?service=NAME), with the password in "
                          f"PGPASSWORD, ~/.pgpass or a libpq service file")
    return _connect_sqlite(target, create)


_LIBPQ_KEYWORDS = ("host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service", "sslmode",
                   "connect_timeout", "options", "application_name", "target_session_attrs", "sslrootcert")


def _libpq_keywords(target: str) -> list[str]:
    """The libpq keywords of a `keyword=value ...` connection string (empty: not one)."""
    found = re.findall(r"(?:^|\s)([A-Za-z_]+)\s*=", target)
    return sorted({k.lower() for k in found if k.lower() in _LIBPQ_KEYWORDS})


def _file_in_the_way(path: str) -> str | None:
    """The first part of `path`'s folder that exists and is not a folder, if any."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    return parent if parent and not os.path.isdir(parent) else None


def _connect_sqlite(path: str, create: bool) -> HistoryDB:
    if path != ":memory:":
        blocker = _file_in_the_way(path)
        if blocker:
            raise ReportError(f"{path}: {blocker} is a file, not a folder")
        if not create and not os.path.exists(path):
            raise ReportError(f"{path}: no such database (run 'nodebench-report ingest ... --db {path}' first)")
        if os.path.isdir(path):
            raise ReportError(f"{path}: is a directory, expected an SQLite database file")
        if create:
            parent = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(parent):
                raise ReportError(f"{path}: the folder {parent} does not exist")
    try:
        # isolation_level=None: no implicit transactions; writes happen in transaction() only
        conn = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise HistoryUnavailable(f"{path}: the database stayed locked by another writer") from None
        raise ReportError(f"{path}: not a usable SQLite database: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise ReportError(f"{path}: not a usable SQLite database: {exc}") from None
    return HistoryDB(conn, "sqlite", path)


def _connect_pg(url: str) -> HistoryDB:
    check_url(url)
    psycopg = import_psycopg()
    extra = {}
    if "connect_timeout" not in url and not os.environ.get("PGCONNECT_TIMEOUT"):
        extra["connect_timeout"] = PG_CONNECT_TIMEOUT_S
    if "application_name" not in url and not os.environ.get("PGAPPNAME"):
        extra["application_name"] = "nodebench-report"
    try:
        conn = psycopg.connect(url, autocommit=True, **extra)
    except psycopg.OperationalError as exc:
        raise HistoryUnavailable(f"{url}: cannot reach the PostgreSQL history: {_first_lines(exc)}") from None
    except psycopg.Error as exc:
        raise ReportError(f"{url}: not a usable PostgreSQL URL: {_first_lines(exc)}") from None
    return HistoryDB(conn, "postgresql", url)
