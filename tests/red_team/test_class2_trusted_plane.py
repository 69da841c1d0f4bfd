"""Red team, class 2: what the wrapper trusts, reached from inside the sandbox.

One OpenCode turn runs scripts/trusted_plane_opencode.py, which tries every way at once (the hook's socket and its
folder, plugins and config in each folder OpenCode reads them from, a program OpenCode runs from its cache, and
OpenCode's own process: its connection to the hook and its listening port, copied with pidfd_getfd). A second
message follows while a thief may hold OpenCode's port; then the backend restarts and runs the grep tool. Each
variant then looks at its own effect on the host: the socket's inode, a marker a planted plugin or program would
write, an audit row for a forged call, what the thief received. One Copilot turn does the same for Copilot's
program folder and the MCP configs a planted file could add.
"""

import asyncio
import base64
import json
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.backends.copilot.program import programs_root
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.state.audit import recent
from tests.helpers.a2a_wire import final_state, stream, user_message
from tests.helpers.behaviour import BACKENDS, Harness
from tests.helpers.copilot_fixtures import COPILOT_CACHE
from tests.helpers.tenants import sole_backend
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

OPENCODE = next(backend for backend in BACKENDS if backend.name == "opencode")
COPILOT = next(backend for backend in BACKENDS if backend.name == "copilot")
SCRIPTS = Path(__file__).parent / "scripts"


@dataclass
class Seen:
    markers: Path
    results: dict[str, str] = field(default_factory=dict)
    sockets_before: dict[str, int] = field(default_factory=dict)
    sockets_after: dict[str, int] = field(default_factory=dict)
    audit_targets: list[str] = field(default_factory=list)
    forged_id: str = ""
    secret_prompt: str = ""


def _sockets(folder: Path) -> dict[str, int]:
    return {path.name: path.lstat().st_ino for path in folder.iterdir()}


async def _send(http: httpx.AsyncClient, url: str, params: dict[str, Any], limit: float = 60) -> list[dict[str, Any]]:
    """A turn; one that a thief broke (or that hangs) ends after `limit` seconds with no events."""
    try:
        async with asyncio.timeout(limit):
            return await stream(http, url, params)
    except (TimeoutError, httpx.HTTPError):
        return []


@pytest.fixture(scope="module")
async def opencode_attacked(tmp_path_factory: pytest.TempPathFactory, request) -> AsyncIterator[Seen]:  # type: ignore[no-untyped-def]
    async with OfflineModel() as offline_model:  # the module's own (a session one was torn down between modules)
        tmp = tmp_path_factory.mktemp("trusted-plane")
        harness = Harness(OPENCODE, offline_model, tmp, request.node)
        workdir = tmp / "state" / "workspace"
        seen = Seen(workdir / "rt", forged_id=f"forged-{uuid.uuid4().hex}", secret_prompt=f"prompt-{uuid.uuid4().hex}")
        seen.markers.mkdir(parents=True)
        shutil.copy(SCRIPTS / "trusted_plane_opencode.py", workdir / "attack.py")
        import time

        t0 = time.monotonic()
        async with httpx.AsyncClient(timeout=90) as http:
            async with harness.serving(auto_approve=True) as served:
                hooks = sole_backend(served.agent).hooks
                folder = hooks.path.parent  # the sockets the wrapper serves, shown read-only inside
                seen.sockets_before = _sockets(folder)
                command = f"python3 attack.py {seen.markers} {seen.forged_id}"
                events = await _send(http, served.jsonrpc, bash_params(command, description="run a command"))
                assert events and final_state(events) == "TASK_STATE_COMPLETED", (
                    events[-1:] or "the attack's turn ended"
                )
                seen.sockets_after = _sockets(folder)
                print("attack", time.monotonic() - t0)
                await _send(http, served.jsonrpc, {"message": user_message(f"remember {seen.secret_prompt}")}, 30)
                database = served.agent.settings.state_dir / "state.db"  # type: ignore[operator]
                print("second message", time.monotonic() - t0)
            async with harness.serving(auto_approve=True) as served:  # a restart: what was planted would load now
                grep = '[[tool:grep {"pattern": "anything"}]]'
                await _send(http, served.jsonrpc, {"message": user_message(grep)})
                print("restarted", time.monotonic() - t0)
                await _send(http, served.jsonrpc, bash_params("echo second-start", description="run a command"))
                print("turns", time.monotonic() - t0)
        seen.results = json.loads((seen.markers / "results.json").read_text())
        seen.audit_targets = [entry.target for entry in recent(database, 200)]
        yield seen


PLANTED = {
    "plugin-in-config-folder": ["loaded-config-plugin"],
    "opencode-json-in-config-folder": ["loaded-json-plugin"],
    "plugin-in-home-dot-opencode": ["loaded-home-plugin", "loaded-home-config-plugin"],
    "plugin-in-project-dot-opencode": ["loaded-project-plugin", "loaded-project-plugins"],
    "project-opencode-json": ["loaded-json-plugin"],
    "ripgrep-planted-in-cache": ["ran-planted-rg"],
}
LOADED: dict[str, str] = {}  # attempts a start still loads: none since the wrapper owns those places


@pytest.mark.parametrize(
    "attempt",
    [pytest.param(a, marks=pytest.mark.xfail(strict=True, reason=LOADED[a])) if a in LOADED else a for a in PLANTED],
)
def test_nothing_planted_is_loaded_or_run_at_the_next_start(opencode_attacked: Seen, attempt: str) -> None:
    assert attempt in opencode_attacked.results, "the attempt was made"
    loaded = [marker for marker in PLANTED[attempt] if (opencode_attacked.markers / marker).exists()]
    assert not loaded, (attempt, opencode_attacked.results[attempt], loaded)


@pytest.mark.parametrize("attempt", ["replace-hook-socket", "bind-impostor-in-socket-folder", "rename-socket-folder"])
def test_the_wrappers_sockets_stay_its_own(opencode_attacked: Seen, attempt: str) -> None:
    assert "Error" in opencode_attacked.results[attempt], opencode_attacked.results[attempt]  # refused, whatever why
    assert opencode_attacked.sockets_after == opencode_attacked.sockets_before, "the same sockets, the same inodes"


def test_a_call_forged_on_opencodes_own_hook_connection_is_never_decided(opencode_attacked: Seen) -> None:
    said = opencode_attacked.results["forge-hook-call-on-opencodes-connection"]
    assert f"echo {opencode_attacked.forged_id}" not in opencode_attacked.audit_targets, said


def test_opencodes_listening_port_cannot_be_taken_over(opencode_attacked: Seen) -> None:
    stolen = opencode_attacked.markers / "stolen.txt"
    received = stolen.read_bytes() if stolen.exists() else b""
    said = opencode_attacked.results["steal-opencodes-listening-port"]
    assert b"Authorization" not in received and opencode_attacked.secret_prompt.encode() not in received, (
        said,
        received,
    )


# Each folder the CLI's loader (and its package's index.js) looks in for a cached package: a newer version planted
# there is what an auto-update would run; each planted one writes a marker when run.
CACHED_PACKAGES = ("$XDG_CACHE_HOME/copilot/pkg", "$COPILOT_HOME/pkg", "$HOME/.copilot/pkg", "$HOME/.cache/copilot/pkg")


def _plant_newer_versions(marker: Path) -> str:
    """Shell lines planting, in each cache folder, a version newer than the CLI's whose code writes `marker`."""
    code = f'require("fs").writeFileSync("{marker}", "ran")'
    script = f"""for root in {" ".join(f'"{root}"' for root in CACHED_PACKAGES)}; do
  d="$root/linux-x64/99.0.0"; mkdir -p "$d/prebuilds/linux-x64" || continue
  echo '{{"type": "commonjs"}}' > "$d/package.json"
  for name in index.js app.js cli-main.js; do echo '{code}' > "$d/$name"; done
  touch "$d/prebuilds/linux-x64/runtime.node" "$d/.extraction-complete"
done"""
    return f"echo {base64.b64encode(script.encode()).decode()} | base64 -d | sh"


def _own_cache(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    """Copilot's section with a cache of its own, not the tests' shared one: what is planted in it stays here."""
    section = COPILOT.section(model, workdir, state_dir)
    return section | {"env": section["env"] | {"XDG_CACHE_HOME": str(state_dir / "copilot-cache")}}


async def test_copilots_program_folder_is_not_writable_from_inside(tmp_path: Path) -> None:
    planted, marker = f"redteam-{uuid.uuid4().hex}.js", tmp_path / "state" / "workspace" / "ran-planted-copilot"
    async with OfflineModel() as model:
        harness = Harness(replace(COPILOT, section=_own_cache), model, tmp_path, None)  # type: ignore[arg-type]
        attack = (
            'echo "$COPILOT_CLI_RESOLVED_DIST_DIR" > where.txt; '
            f'echo "require(\\"fs\\")" > "$COPILOT_CLI_RESOLVED_DIST_DIR/{planted}" 2>&1; '
            f"{_plant_newer_versions(marker)}; echo tried"
        )
        async with httpx.AsyncClient(timeout=120) as http:
            async with harness.serving(auto_approve=True) as served:
                events = await _send(http, served.jsonrpc, bash_params(attack, description="run a command"))
                assert events and final_state(events) == "TASK_STATE_COMPLETED", events[-1:]
                program = Path((served.workdir / "where.txt").read_text().strip())
            newer = list((tmp_path / "state").rglob("99.0.0"))
            async with harness.serving(auto_approve=True) as served:  # a restart: what was planted would run now
                events = await _send(http, served.jsonrpc, bash_params("echo again", description="run a command"))
                assert events and final_state(events) == "TASK_STATE_COMPLETED", events[-1:]
    assert (program / "index.js").is_file(), f"the attack aimed at the program the CLI runs: {program}"
    assert newer, "newer versions were planted in the caches the backend writes"
    assert not _removed(planted, tmp_path)
    assert not marker.exists(), f"a newer version planted in {newer} ran at the next start"


def _removed(name: str, tmp_path: Path) -> list[Path]:
    """Where a file of that name was written in the CLI's program folders; removed, so the shared test cache is
    left as it was."""
    programs = [*COPILOT_CACHE.glob(f"copilot/pkg/*/*/{name}"), *programs_root().glob(f"*/pkg/*/*/{name}")]
    written = [*programs, *tmp_path.rglob(name)]
    for path in written:
        path.unlink()
    return written
