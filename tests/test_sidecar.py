"""runtime.kind sidecar on this machine: a real `a2a-wrap sidecar` process and real stand-ins (a2a_wrapper/sandbox/
stand_in.py, sidecar.py), then whole agents of three kinds whose backend it starts.

What the stand-in must be to the wrapper is a process: its stdin, stdout, stderr, exit code and signals are the
backend's, and when it goes, the backend goes. The containers' part (separate PID namespaces, the read-only
sockets volume) is tried for real in tests/red_team/test_class6_containers.py, in docker.
"""

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from a2a_wrapper.config.runtimes import SidecarRuntime
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.sandbox.beside import STAND_IN
from a2a_wrapper.sandbox.sidecar import socket_path
from tests.helpers.a2a_wire import final_state, stream
from tests.helpers.behaviour import BACKENDS, Harness
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

A2A_WRAP = Path(sys.executable).with_name("a2a-wrap")
KINDS = [b for b in BACKENDS if b.name in ("opencode", "copilot", "acp-opencode")]


@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[Path]:
    """A sidecar serving `tmp_path/f`; its log in `tmp_path/sidecar.log`. Yields the folders path."""
    folders = tmp_path / "f"
    log = (tmp_path / "sidecar.log").open("wb")
    process = subprocess.Popen([A2A_WRAP, "sidecar", "--folders", str(folders)], stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while not socket_path(folders).exists():
        assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "sidecar.log").read_text()
        time.sleep(0.05)
    try:
        yield folders
    finally:
        process.terminate()
        process.wait(10)
        log.close()


def stand_in(folders: Path, *command: str, timeout: float = 10, **options: object) -> "subprocess.Popen[bytes]":
    argv = [sys.executable, "-I", "-S", str(STAND_IN), str(socket_path(folders)), str(timeout), "--", *command]
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **options,  # type: ignore[call-overload]
    )


def test_stdin_stdout_stderr_and_the_exit_code_are_the_backends(sidecar: Path) -> None:
    with stand_in(sidecar, "sh", "-c", "cat; echo to-stderr >&2; exit 3") as process:
        out, err = process.communicate(b"line one\nline two\n", timeout=30)
    assert (out, err, process.returncode) == (b"line one\nline two\n", b"to-stderr\n", 3)


def test_the_backend_gets_the_stand_ins_environment_and_folder(sidecar: Path, tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "ONLY_THIS": "given"}
    with stand_in(sidecar, "sh", "-c", 'echo "$ONLY_THIS $HOME"; pwd', env=env, cwd=tmp_path) as process:
        out, _ = process.communicate(timeout=30)
    assert out.decode().splitlines() == ["given ", str(tmp_path)], "exactly the stand-in's environment, in its folder"


def test_a_signal_to_the_stand_in_reaches_the_backend(sidecar: Path) -> None:
    with stand_in(sidecar, "sh", "-c", "trap 'exit 42' TERM; echo ready; while :; do sleep 0.1; done") as process:
        assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 42


def test_when_the_stand_in_dies_the_backend_and_what_it_started_die_with_it(sidecar: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    with stand_in(sidecar, "sh", "-c", f"sleep 300 & echo $$ $! > {pids}; wait") as process:
        deadline = time.monotonic() + 30
        while not pids.exists() or not pids.read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        started = [int(pid) for pid in pids.read_text().split()]
        process.kill()  # no goodbye: the connection just closes
        process.wait(10)
    deadline = time.monotonic() + 10
    while alive := [pid for pid in started if _running(pid)]:
        assert time.monotonic() < deadline, f"still running: {alive}"
        time.sleep(0.05)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_no_sidecar_is_a_sentence_naming_the_socket(tmp_path: Path) -> None:
    with stand_in(tmp_path, "true", timeout=0.5) as process:
        _, err = process.communicate(timeout=30)
    assert process.returncode == 127
    assert f"no sidecar answers at {socket_path(tmp_path)} after 0 s" in err.decode(), err


def test_a_program_the_sidecar_cannot_start_is_a_sentence(sidecar: Path) -> None:
    with stand_in(sidecar, "/no/such/program") as process:
        _, err = process.communicate(timeout=30)
    assert process.returncode == 127 and b"the sidecar did not start it: /no/such/program" in err, err


@pytest.fixture
async def model() -> AsyncIterator[OfflineModel]:
    async with OfflineModel() as offline_model:
        yield offline_model


@pytest.mark.parametrize("backend", KINDS, ids=[b.name for b in KINDS])
async def test_each_kind_runs_its_backend_and_tools_in_the_sidecar(
    backend, model: OfflineModel, sidecar: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:  # type: ignore[no-untyped-def]
    harness = Harness(backend, model, tmp_path, request.node)
    runtime = SidecarRuntime(sockets=tmp_path / "s", folders=sidecar)
    async with httpx.AsyncClient(timeout=120) as http, harness.serving(runtime=runtime, auto_approve=True) as served:
        events = await stream(http, served.jsonrpc, bash_params(ANCESTRY, description="note"))
        assert final_state(events) == "TASK_STATE_COMPLETED", events[-1]
    ancestry = (tmp_path / "state" / "workspace" / "ancestry.txt").read_text()
    # The tool descends from the sidecar (here a child of this test), not from the wrapper's stand-in.
    assert "a2a-wrap sidecar --folders" in ancestry and "stand_in.py" not in ancestry, ancestry
    assert (sidecar / "tenants").is_dir(), "the backend's own folders are in runtime.folders"
    assert not (tmp_path / "state" / "tenants").exists(), "and none in the wrapper's state folder"


# The command lines of the tool's process and each of its parents, one a line.
ANCESTRY = (
    "p=$$; while [ \"$p\" -gt 1 ]; do tr '\\0' ' ' < /proc/$p/cmdline; echo; "
    "p=$(cut -d' ' -f4 /proc/$p/stat); done > ancestry.txt"
)
