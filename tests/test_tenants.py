"""One tenant per backend: each caller's turns run in a backend of their own (its sandbox, data and password).

Real OpenCode in the sandbox on the offline model, two callers with their own keys. Bob's own bash, allowed every
call, looks for Alice's conversation everywhere it can — every folder, every process, every port, even with her
backend's password in hand — and the test then reads what it found, and the disk. The cap and the idle stop are
watched through the backends' processes themselves.
"""

import asyncio
import logging
import os
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.agent import running_agent
from a2a_wrapper.backends.tenants.folders import TENANTS, tenant_id
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import ShieldConfig
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import answer_text, final_state, status_text, stream, user_message
from tests.helpers.auth import bearer
from tests.helpers.tool_messages import answer_params, bash_params

pytestmark = pytest.mark.slow

KEYS = {"ALICE_KEY": "alice-key-7d20c4", "BOB_KEY": "bob-key-19e6fa"}
PEOPLE = {"callers": [{"name": "alice", "key_env": "ALICE_KEY"}, {"name": "bob", "key_env": "BOB_KEY"}]}
COMPLETED, ASKED, REJECTED = "TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_REJECTED"
PASSWORD_VARIABLE = "OPENCODE_SERVER_PASSWORD"


@dataclass
class Callers:
    alice: httpx.AsyncClient
    bob: httpx.AsyncClient


@pytest.fixture
async def callers(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Callers]:
    """Alice and Bob, each with a client presenting her or his key."""
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    async with (
        httpx.AsyncClient(timeout=120, headers=bearer(KEYS["ALICE_KEY"])) as alice,
        httpx.AsyncClient(timeout=120, headers=bearer(KEYS["BOB_KEY"])) as bob,
    ):
        yield Callers(alice, bob)


def settings_of(make_settings: SettingsFactory, **fields: Any) -> AgentSettings:
    return make_settings(auth=PEOPLE, **fields)


async def backends(served: ServedAgent) -> dict[str, dict[str, Any]]:
    """The running callers' backends' health, by tenant id (the agent's /health shows no caller's name)."""
    health = await served.agent.backend.health()
    return {backend["tenant"]: dict(backend) for backend in health["tenants"]["backends"]}


def process_tree(pid: int) -> list[int]:
    """`pid` and every process under it (the sandbox's bubblewrap, its bridge, OpenCode and its children)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo += children.get(current, [])
    return tree


def environment_of(pid: int) -> dict[str, str]:
    """The environment a process of the backend's tree was started with, as the host sees it."""
    found: dict[str, str] = {}
    for member in process_tree(pid):
        try:
            raw = Path(f"/proc/{member}/environ").read_bytes()
        except OSError:
            continue
        for item in raw.split(b"\0"):
            name, _, value = item.decode(errors="replace").partition("=")
            found.setdefault(name, value)
    return found


def port_of(pid: int) -> int:
    """The port the backend's OpenCode listens on (in its own network namespace), from its command line."""
    arguments = " ".join(Path(f"/proc/{p}/cmdline").read_text().replace("\0", " ") for p in process_tree(pid))
    found = re.search(r"--port[= ](\d+)", arguments)
    assert found, arguments
    return int(found.group(1))


def files_holding(folder: Path, text: str) -> list[Path]:
    needle = text.encode()
    return [path for path in folder.rglob("*") if path.is_file() and needle in path.read_bytes()]


def split_word(name: str, value: str) -> str:
    """Shell that sets $name to `value` without the value appearing whole in the command (the command is kept in
    the searching caller's own conversation and process list, where a search would otherwise find it)."""
    half = len(value) // 2
    return f"{name}_a='{value[:half]}'; {name}_b='{value[half:]}'; {name}=\"${name}_a${name}_b\"; "


def mark(name: str) -> str:
    """Shell printing the section mark ==NAME== (which the command itself does not hold, so its own process list
    cannot pass for a section)."""
    return f"printf '==%s==\\n' {name}; "


def probe(secret: str, password: str, username: str, port: int, her_folder: Path) -> str:
    """Bob's search for Alice's conversation, its findings written to probe.txt in the workspace."""
    skipped = " ".join(f"--exclude-dir={d}" for d in ("proc", "sys", "dev", "usr", "lib", "lib64", "lib32", "bin"))
    listening = 'awk \'NR>1 && $4=="0A" {split($2,a,":"); print a[2]}\' /proc/net/tcp /proc/net/tcp6'
    session = f'-s -m 5 -u "{username}:$password" http://127.0.0.1:$p/session'
    return (
        split_word("secret", secret)
        + split_word("password", password)
        + "{ "
        + mark("FILES")
        + f'timeout 100 grep -rl {skipped} "$secret" / 2>/dev/null; echo "grep exit $?"; '
        + mark("PROCESSES")
        + "ps -eo pid,args; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; echo; done; "
        + mark("HER-FOLDER")
        + f"ls -la {her_folder}; "
        + mark("PORTS")
        + f'ports="{port} $({listening} | while read h; do echo $((16#$h)); done)"; echo $ports; '
        + f"for p in $ports; do curl {session}; echo; curl -x http://127.0.0.1:3128 {session}; echo; done; "
        + mark("END")
        + "} > probe.txt 2>&1; echo probed"
    )


@pytest.mark.timeout(600)
async def test_one_callers_tools_find_nothing_of_anothers_conversation(
    make_settings: SettingsFactory, offline_model: OfflineModel, callers: Callers
) -> None:
    alice, bob = callers.alice, callers.bob
    secret = f"alice-says-{uuid.uuid4().hex}"
    settings = settings_of(make_settings, auto_approve=True)
    assert settings.state_dir is not None
    hers, his = (settings.state_dir / TENANTS / tenant_id(name) for name in ("alice", "bob"))
    async with serving(settings, offline_model) as served:
        said = await stream(alice, served.jsonrpc, {"message": user_message(f"Keep this between us: {secret}")})
        assert final_state(said) == COMPLETED, said
        assert (await stream(bob, served.jsonrpc, {"message": user_message("hello")}))[-1]

        running = await backends(served)
        assert set(running) == {tenant_id("alice"), tenant_id("bob")}
        her_pid, his_pid = running[tenant_id("alice")]["pid"], running[tenant_id("bob")]["pid"]
        assert her_pid != his_pid, "two backend processes"
        her_env, his_env = environment_of(her_pid), environment_of(his_pid)
        assert her_env[PASSWORD_VARIABLE] != his_env[PASSWORD_VARIABLE], "each its own password"
        assert her_env["XDG_DATA_HOME"].startswith(f"{hers}/") and his_env["XDG_DATA_HOME"].startswith(f"{his}/")
        assert files_holding(hers, secret), "her conversation is kept in her backend's folder"
        assert not files_holding(his, secret) and not files_holding(settings.state_dir / "workspace", secret)
        her_port, her_user = port_of(her_pid), her_env.get("OPENCODE_SERVER_USERNAME", "opencode")

        command = probe(secret, her_env[PASSWORD_VARIABLE], her_user, her_port, hers)
        probed = await stream(bob, served.jsonrpc, bash_params(command, description="look around"))
        assert final_state(probed) == COMPLETED, probed
        found = (served.workdir / "probe.txt").read_text(errors="replace")

    assert "==END==" in found, f"the probe ran to its end: {found[-2000:]}"
    files = found.split("==FILES==\n", 1)[1].split("==PROCESSES==", 1)[0].split()
    assert files[:2] == ["grep", "exit"] and files[2] in ("1", "2"), f"grep found her words nowhere, in time: {files}"
    assert "opencode" in found.split("==PROCESSES==", 1)[1], "the probe saw its own backend's processes"
    assert her_env[PASSWORD_VARIABLE] not in found.split("==PORTS==", 1)[0], "her password is in no process it sees"
    assert "No such file or directory" in found.split("==HER-FOLDER==", 1)[1].split("==PORTS==", 1)[0]
    assert secret not in found and "alice/" not in found, "no session of hers answered on any port it could reach"


@pytest.mark.timeout(600)
async def test_past_the_cap_a_new_caller_is_rejected_while_the_first_goes_on(
    make_settings: SettingsFactory, offline_model: OfflineModel, callers: Callers
) -> None:
    alice, bob = callers.alice, callers.bob
    settings = settings_of(make_settings, shield=ShieldConfig(), tenants={"max_running": 1})  # every command asks
    async with serving(settings, offline_model) as served:
        asked = await stream(alice, served.jsonrpc, bash_params("touch hers.txt"))
        assert final_state(asked) == ASKED, asked  # her turn waits for her: her backend is busy

        refused = await stream(bob, served.jsonrpc, {"message": user_message("hello")})
        assert final_state(refused) == REJECTED, refused
        sentence = status_text(refused[-1]["statusUpdate"]["status"])
        assert "at its caller limit" in sentence and "tenants.max_running" in sentence, sentence
        assert set(await backends(served)) == {tenant_id("alice")}, "no backend was started for him"

        answered = await stream(alice, served.jsonrpc, answer_params(asked[0]["task"], "yes"))
        assert final_state(answered) == COMPLETED, answered
        assert (served.workdir / "hers.txt").exists(), "hers went on"

        served_now = await stream(bob, served.jsonrpc, {"message": user_message("hello again")})  # hers is idle now
        assert final_state(served_now) == COMPLETED, served_now
        assert set(await backends(served)) == {tenant_id("bob")}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pids: list[int]) -> None:
    """Returns once none of `pids` runs (the idle stop is the pool's own timer: there is no event to await)."""
    while any(alive(pid) for pid in pids):
        time.sleep(0.2)


async def running_gauge(client: httpx.AsyncClient, served: ServedAgent) -> float:
    """What /metrics says of the callers' backends running."""
    scraped = (await client.get(served.url + "/metrics")).text
    found = re.search(r"^a2a_wrapper_backends_running (\S+)$", scraped, re.MULTILINE)
    assert found, scraped
    return float(found.group(1))


async def turns(client: httpx.AsyncClient, url: str, context_id: str | None = None) -> tuple[int, str]:
    """How many user messages the model saw in this turn's conversation, and its context."""
    events = await stream(client, url, {"message": user_message("[[turns]]", context_id)})
    assert final_state(events) == COMPLETED, events
    counted = re.search(r"This conversation holds (\d+) user messages", answer_text(events))
    assert counted, events
    return int(counted.group(1)), events[0]["task"]["contextId"]


@pytest.mark.timeout(600)
async def test_an_idle_backend_stops_and_its_caller_resumes_where_she_was(
    make_settings: SettingsFactory, offline_model: OfflineModel, callers: Callers
) -> None:
    alice = callers.alice
    settings = settings_of(make_settings, auto_approve=True, tenants={"idle_stop": 2})
    async with serving(settings, offline_model) as served:
        assert (await served.agent.backend.health())["tenants"]["running"] == 0, "none before a caller comes"
        count, context = await turns(alice, served.jsonrpc)
        assert count == 1
        first_pid = (await backends(served))[tenant_id("alice")]["pid"]
        tree = process_tree(first_pid)
        assert await running_gauge(alice, served) == 1

        async with asyncio.timeout(60):
            await asyncio.to_thread(wait_gone, tree)
        assert (await served.agent.backend.health())["tenants"]["running"] == 0
        assert await running_gauge(alice, served) == 0

        count, again = await turns(alice, served.jsonrpc, context)
        assert (count, again) == (2, context), "the model saw her earlier turn"
        assert (await backends(served))[tenant_id("alice")]["pid"] != first_pid


@pytest.mark.parametrize(("mode", "warned"), [("in_place", True), ("per_task", False)])
async def test_several_callers_working_in_place_are_told_at_start_they_share_the_tree(
    make_settings: SettingsFactory, callers: Callers, caplog: pytest.LogCaptureFixture, mode: str, warned: bool
) -> None:
    settings = settings_of(make_settings, workspace={"mode": mode})
    with caplog.at_level(logging.WARNING, logger="a2a_wrapper.agent"):
        async with asyncio.timeout(60), running_agent(settings):
            pass
    said = [record.getMessage() for record in caplog.records if "works in place with 2 callers" in record.getMessage()]
    assert len(said) == warned, said
    assert not said or str(settings.backend.workdir) in said[0]
