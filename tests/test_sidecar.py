"""runtime.kind sidecar on this machine: a real `a2a-wrap sidecar` process and real stand-ins (a2a_wrapper/sandbox/
stand_in.py, sidecar.py), then whole agents of three kinds whose backend it starts.

What the stand-in must be to the wrapper is a process: its stdin, stdout, stderr, exit code and signals are the
backend's, and when it goes, the backend goes. The containers' part (separate PID namespaces, the read-only
sockets volume) is tried for real in tests/red_team/test_class6_containers.py, in docker.
"""

import asyncio
import base64
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from a2a_wrapper.config.runtimes import SidecarRuntime
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.sandbox.beside import STAND_IN
from a2a_wrapper.sandbox.bubblewrap import find_bwrap
from a2a_wrapper.sandbox.sidecar import socket_path
from tests.helpers.a2a_wire import final_state, stream
from tests.helpers.behaviour import BACKENDS, Harness
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

A2A_WRAP = Path(sys.executable).with_name("a2a-wrap")
KINDS = [b for b in BACKENDS if b.name in ("opencode", "copilot", "acp-opencode")]


def _run_sidecar(tmp_path: Path, *prefix: str) -> Iterator[Path]:
    """A sidecar serving `tmp_path/f`, its command after `prefix`; its log in `tmp_path/sidecar.log`."""
    folders = tmp_path / "f"
    log = (tmp_path / "sidecar.log").open("wb")
    process = subprocess.Popen([*prefix, A2A_WRAP, "sidecar", "--folders", str(folders)], stdout=log, stderr=log)
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


@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[Path]:
    """A sidecar on this network (as a pod's second container). Yields the folders path."""
    yield from _run_sidecar(tmp_path)


@pytest.fixture
def apart(tmp_path: Path) -> Iterator[Path]:
    """A sidecar in a network namespace of its own with loopback only (as compose's `network_mode: none`)."""
    yield from _run_sidecar(tmp_path, str(find_bwrap()), "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent")


def stand_in(
    folders: Path,
    *command: str,
    timeout: float = 10,
    network: str = "shared",
    fds: tuple[int, ...] = (),
    **options: Any,
) -> "subprocess.Popen[bytes]":
    spec = {"socket": str(socket_path(folders)), "timeout": timeout, "network": network, "fds": list(fds)}
    argv = [sys.executable, "-I", "-S", str(STAND_IN), json.dumps(spec), "--", *command]
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=fds,
        **options,
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


@pytest.mark.parametrize(
    ("fixture", "named", "sentence"),
    [
        ("sidecar", "none", b"runtime.network is none, but the backend's container shares the wrapper's network"),
        ("apart", "shared", b"runtime.network is shared, but the backend's container has a network of its own"),
    ],
)
def test_a_start_that_names_another_network_than_the_sidecars_is_refused(
    fixture: str, named: str, sentence: bytes, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    folders = request.getfixturevalue(fixture)
    ran = tmp_path / "ran"
    with stand_in(folders, "touch", str(ran), network=named) as process:
        _, err = process.communicate(timeout=30)
    assert process.returncode == 127 and sentence in err, err
    assert not ran.exists(), "nothing ran"


def test_a_listening_socket_handed_over_reaches_the_command_at_the_wrappers_number(apart: Path) -> None:
    """How the wrapper reaches a port in a network it cannot dial: the socket crosses by descriptor, and the
    command finds it at the number the wrapper gave it (the number its arguments name)."""
    ours, theirs = socket.socketpair()
    number = 37
    os.dup2(theirs.fileno(), number)
    theirs.close()
    try:
        command = f"import os; os.write({number}, b'across ' + str(os.fstat({number}).st_mode).encode())"
        with stand_in(apart, sys.executable, "-c", command, network="none", fds=(number,)) as process:
            _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
        ours.settimeout(5)
        assert ours.recv(100).startswith(b"across "), "written through the descriptor handed over"
    finally:
        os.close(number)
        ours.close()


@pytest.fixture
async def model() -> AsyncIterator[OfflineModel]:
    async with OfflineModel() as offline_model:
        yield offline_model


@pytest.mark.parametrize("backend", KINDS, ids=[b.name for b in KINDS])
async def test_each_kind_runs_its_backend_and_tools_in_the_sidecar_with_no_network_but_the_wrappers(
    backend, model: OfflineModel, apart: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:  # type: ignore[no-untyped-def]
    """compose's layout: the backend's container has loopback only. The backend reaches the model (forwarded
    through the egress proxy), the wrapper reaches OpenCode's port (a socket handed over), and a tool that dials
    the wrapper's own port directly reaches nothing."""
    harness = Harness(backend, model, tmp_path, request.node)
    runtime = SidecarRuntime(sockets=tmp_path / "s", folders=apart, network="none")
    async with httpx.AsyncClient(timeout=120) as http, harness.serving(runtime=runtime, auto_approve=True) as served:
        command = f"{ANCESTRY}; {DIAL % urlsplit(served.url).port} > dialled.txt 2>&1"
        events = await stream(http, served.jsonrpc, bash_params(command, description="note"))
        assert final_state(events) == "TASK_STATE_COMPLETED", events[-1]
        await asyncio.sleep(0.3)  # six looks of the stand-in's at the places the backend loads code from
        assert served.agent.backend.restarts == 0, "the backend itself changes none of them"
    workspace = tmp_path / "state" / "workspace"
    ancestry = (workspace / "ancestry.txt").read_text()
    # The tool descends from the sidecar (here a child of this test), not from the wrapper's stand-in.
    assert "a2a-wrap sidecar --folders" in ancestry and "stand_in.py" not in ancestry, ancestry
    assert "ConnectionRefusedError" in (workspace / "dialled.txt").read_text(), "the wrapper's port is not there"
    assert (apart / "tenants").is_dir(), "the backend's own folders are in runtime.folders"
    assert not (tmp_path / "state" / "tenants").exists(), "and none in the wrapper's state folder"


async def test_a_plugin_planted_during_a_run_stops_the_backend_before_opencode_loads_it(
    model: OfflineModel, apart: Path, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the backend's container its tools can write its own folders: one plants a plugin in OpenCode's
    `HOME/.opencode`, which OpenCode reads again for each new workspace (a task's copy). The stand-in sees the
    change within moments and stops the backend; the next start makes the folder anew, so no later task's
    instance loads the plugin. A turn that plants nothing stops nothing."""
    monkeypatch.delenv("A2A_WRAP_WORKSPACE__MODE", raising=False)  # per task: each task a new OpenCode instance
    opencode = next(backend for backend in KINDS if backend.name == "opencode")
    harness = Harness(opencode, model, tmp_path, request.node)
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    (tmp_path / "state" / "workspace" / "README").write_text("a project\n")
    loaded = tmp_path / "loaded"  # what the plugin writes when OpenCode loads it
    plugin = f"export default async () => {{ await Bun.write({json.dumps(str(loaded))}, 'x'); return {{}} }}"
    plant = f'mkdir -p "$HOME/.opencode/plugin" && printf %s {shlex.quote(plugin)} > "$HOME/.opencode/plugin/p.js"'
    runtime = SidecarRuntime(sockets=tmp_path / "s", folders=apart, network="none")
    async with httpx.AsyncClient(timeout=120) as http, harness.serving(runtime=runtime, auto_approve=True) as served:
        quiet = await stream(http, served.jsonrpc, bash_params("echo nothing planted", description="note"))
        assert final_state(quiet) == "TASK_STATE_COMPLETED", quiet[-1]
        await asyncio.sleep(0.5)  # ten looks of the stand-in's
        assert served.agent.backend.restarts == 0, "a turn that plants nothing stops nothing"
        command = f"echo {base64.b64encode(plant.encode()).decode()} | base64 -d | sh; sleep 1"
        await stream(http, served.jsonrpc, bash_params(command, description="plant"))  # fails or not: it stopped
        for _ in range(600):
            if served.agent.backend.restarts:
                break
            await asyncio.sleep(0.1)
        assert served.agent.backend.restarts == 1, "the plant stopped the backend, which started afresh"
        after = await stream(http, served.jsonrpc, bash_params("echo a new task", description="note"))
        assert final_state(after) == "TASK_STATE_COMPLETED", after[-1]
    assert not loaded.exists(), "OpenCode loaded the planted plugin"
    assert _planted(apart) == [], "the next start made the folder anew"


def _planted(folders: Path) -> list[Path]:
    return list(folders.glob("tenants/*/opencode/home/.opencode/plugin/p.js"))


# A direct connection to a port of the wrapper's on loopback, as a tool ignoring the proxy would make it.
DIAL = 'python3 -c \'import socket; socket.create_connection(("127.0.0.1", %d), 5); print("connected")\''


# The command lines of the tool's process and each of its parents, one a line.
ANCESTRY = (
    "p=$$; while [ \"$p\" -gt 1 ]; do tr '\\0' ' ' < /proc/$p/cmdline; echo; "
    "p=$(cut -d' ' -f4 /proc/$p/stat); done > ancestry.txt"
)
