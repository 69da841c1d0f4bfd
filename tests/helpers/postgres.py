"""A real PostgreSQL for the tests: Debian's server binaries, a private cluster in a temp folder, on 127.0.0.1.

initdb and postgres refuse to run as root; as root (CI) the cluster belongs to the `postgres` user Debian's package
creates, otherwise to the current user. The server trusts local connections (a password in a URL is accepted and
ignored) and commits without waiting for the WAL to reach the disk, as the agent's SQLite file does (WAL,
synchronous=NORMAL): a crash of the process loses nothing, a power cut may lose the last commits.
"""

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from a2a_wrapper.backends.opencode.launch import free_port

SUPERUSER = "postgres"  # the cluster's own role, whoever owns its files


def postgres_binaries() -> Path | None:
    """The newest installed server's bin folder (initdb, pg_ctl, postgres), or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


@dataclass(frozen=True)
class PostgresServer:
    port: int
    folder: Path
    binaries: Path

    def stop(self) -> None:
        """Stopped for real (`pg_ctl stop -m fast`: open connections are cut, as when the server goes away)."""
        _as(_cluster_user(), [self.binaries / "pg_ctl", "-D", self.folder / "data", "-m", "fast", "-w", "stop"])

    def start(self) -> None:
        """Started again on the same data folder and port; returns once it accepts connections."""
        _pg_ctl_start(_cluster_user(), self.binaries, self.folder, self.port)

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{SUPERUSER}{secret}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database's URL: one per test, so no test sees another's rows."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def password_role(self, role: str, password: str) -> None:
        """A role whose logins must give `password` (the cluster trusts every other one), for a refused login."""
        self.sql(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
        rules = self.folder / "data" / "pg_hba.conf"
        rules.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + rules.read_text())  # the first match wins
        self.sql("SELECT pg_reload_conf()")

    def sql(self, statement: str, database: str = "postgres") -> str:
        result = subprocess.run(
            ["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", self.url(database), "-c", statement],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if result.returncode:
            raise RuntimeError(f"psql failed: {result.stderr.strip()}")
        return result.stdout.strip()


@contextmanager
def postgres_for_tests() -> Iterator[PostgresServer]:
    """A server as `running_postgres` starts it; the test is skipped where Debian's server is not installed."""
    binaries = postgres_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql (Debian's postgresql package)")
    with running_postgres(binaries) as server:
        yield server


@contextmanager
def running_postgres(binaries: Path) -> Iterator[PostgresServer]:
    """A cluster initialised, started (pg_ctl waits until it accepts connections) and, at the exit, stopped."""
    folder = Path(tempfile.mkdtemp(prefix="a2a-wrap-postgres-"))
    user = _cluster_user()
    if user is not None:
        os.chown(folder, user.pw_uid, user.pw_gid)
    data = folder / "data"
    port = free_port()
    try:
        _as(user, [binaries / "initdb", "-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync"])
        _as(user, ["mkdir", folder / "sockets"])
        _pg_ctl_start(user, binaries, folder, port)
        try:
            yield PostgresServer(port, folder, binaries)
        finally:
            _as(user, [binaries / "pg_ctl", "-D", data, "-m", "fast", "-w", "-t", "60", "stop"], check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _pg_ctl_start(user: pwd.struct_passwd | None, binaries: Path, folder: Path, port: int) -> None:
    options = f"-h 127.0.0.1 -p {port} -k {folder / 'sockets'} -c synchronous_commit=off -c max_connections=200"
    log = folder / "server.log"
    _as(user, [binaries / "pg_ctl", "-D", folder / "data", "-l", log, "-w", "-t", "60", "-o", options, "start"])


def _cluster_user() -> pwd.struct_passwd | None:
    """Whom the cluster runs as: `postgres` when this process is root, else None (this process's own user)."""
    return pwd.getpwnam(SUPERUSER) if os.geteuid() == 0 else None


def _as(user: pwd.struct_passwd | None, command: list[str | Path], check: bool = True) -> None:
    ids = {} if user is None else {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    result = subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tempfile.gettempdir(),
        **ids,
    )
    if result.returncode and check:
        raise RuntimeError(f"{Path(str(command[0])).name} failed: {result.stderr.strip() or result.stdout.strip()}")
