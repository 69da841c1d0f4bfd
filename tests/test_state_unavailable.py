"""A state database that cannot be used stops the start with one sentence naming where (state.url with its
password masked, or state_dir) and what went wrong: `a2a-wrap serve` run for real against a PostgreSQL that is not
there, refuses the login or lacks the database, and against state folders that cannot be made or written."""

import subprocess
import uuid
from pathlib import Path

import yaml

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.sandbox.bubblewrap import find_bwrap
from tests.helpers.cli import a2a_wrap
from tests.helpers.postgres import SUPERUSER, PostgresServer

SECRET = "s3cret-Pa55word"


def config(tmp_path: Path, state_dir: Path, url: str | None = None) -> Path:
    content = {
        "card": {"name": "unstartable"},
        "server": {"port": free_port()},
        "backend": {"kind": "opencode"},
        "runtime": {"kind": "process"},
        "state_dir": str(state_dir),
        **({"state": {"url": url}} if url else {}),
    }
    path = tmp_path / f"agent-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(content))
    return path


def refused_start(result: subprocess.CompletedProcess[str]) -> str:
    """The one line the failed start printed (no traceback, the password nowhere)."""
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output and SECRET not in output, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    return lines[0]


def test_postgresql_not_listening_is_a_sentence_naming_state_url(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    url = f"postgresql://agent:{SECRET}@127.0.0.1:{port}/state"
    line = refused_start(a2a_wrap("serve", "--config", str(config(tmp_path, tmp_path / "s", url))))
    assert line == (
        f"Error: state.url postgresql://agent:***@127.0.0.1:{port}/state: the state database cannot be used: "
        f"connection refused (nothing listens at 127.0.0.1:{port})"
    )


def test_an_unknown_database_host_is_a_sentence_naming_it(tmp_path: Path) -> None:
    url = f"postgresql://agent:{SECRET}@no-such-host.invalid/state"
    line = refused_start(a2a_wrap("serve", "--config", str(config(tmp_path, tmp_path / "s", url))))
    assert line.startswith("Error: state.url postgresql://agent:***@no-such-host.invalid/state: "), line
    assert "unknown host (no-such-host.invalid:" in line, line


def test_a_refused_login_is_a_sentence_naming_state_url(tmp_path: Path, postgres: PostgresServer) -> None:
    role = f"r_{uuid.uuid4().hex[:8]}"
    postgres.password_role(role, "the-right-one")
    url = f"postgresql://{role}:{SECRET}@127.0.0.1:{postgres.port}/postgres"
    line = refused_start(a2a_wrap("serve", "--config", str(config(tmp_path, tmp_path / "s", url))))
    assert line == (
        f"Error: state.url postgresql://{role}:***@127.0.0.1:{postgres.port}/postgres: the state database cannot "
        f'be used: the server refused the login: password authentication failed for user "{role}"'
    )


def test_a_missing_database_is_a_sentence_naming_it(tmp_path: Path, postgres: PostgresServer) -> None:
    url = f"postgresql://{SUPERUSER}:{SECRET}@127.0.0.1:{postgres.port}/never_created"
    line = refused_start(a2a_wrap("serve", "--config", str(config(tmp_path, tmp_path / "s", url))))
    assert line.endswith('the state database cannot be used: database "never_created" does not exist'), line
    assert f"state.url postgresql://{SUPERUSER}:***@127.0.0.1:{postgres.port}/never_created" in line


def test_a_state_dir_that_cannot_be_made_is_a_sentence_naming_it(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    state_dir = tmp_path / "a-file" / "state"
    line = refused_start(a2a_wrap("serve", "--config", str(config(tmp_path, state_dir))))
    assert line == f"Error: state_dir {state_dir}: the state folder cannot be used: Not a directory"


def test_a_state_dir_on_a_read_only_file_system_is_a_sentence_naming_it(tmp_path: Path) -> None:
    """The folder bound read-only (bubblewrap): refused for root too, as on a read-only volume."""
    read_only, state_dir = tmp_path / "read-only", tmp_path / "read-only" / "state"
    read_only.mkdir()
    path = config(tmp_path, state_dir)
    bound = (str(find_bwrap()), "--dev-bind", "/", "/", "--ro-bind", str(read_only), str(read_only), "--")
    line = refused_start(a2a_wrap("serve", "--config", str(path), prefix=bound))
    assert line == f"Error: state_dir {state_dir}: the state folder cannot be used: Read-only file system"
    assert not state_dir.exists()


def test_a_sqlite_file_that_cannot_be_opened_is_a_sentence_naming_state_dir(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    (state_dir / "state.db").mkdir(parents=True)  # where the file should be, a folder
    line = refused_start(a2a_wrap("serve", "--config", str(config(tmp_path, state_dir))))
    assert line == (
        f"Error: state_dir {state_dir} (its file state.db): the state database cannot be used: "
        "unable to open database file"
    )
