"""Red team, class 3: one caller reaches another's conversation, files or tasks.

An agent with two callers, alice and bob. Alice tells the agent a secret and has her tool write notes in the
workspace; then bob's tool runs scripts/other_callers_data.py (her notes read and overwritten, the backend's
storage copied, the backend's API asked for every session with the password tools inherit), and bob's client
asks the A2A API for her task and context every way it has. The effects looked at: her secret in anything bob
got, her notes changed, bob's words in her context, her task cancelled.

Twice: with the product's default for a served agent (a workspace per task: her notes are in her context's copy,
which bob's tool looks for anywhere it can see), and working in place (one tree both callers' tools share).
"""

import importlib.util
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import ModelProvider, OpenCodeSettings
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import MODEL_ID, OfflineModel
from tests.conftest import serving
from tests.helpers.a2a_wire import V1, final_state, rpc, stream, user_message
from tests.helpers.auth import bearer
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

KEYS = {"RT_ALICE_KEY": "alice-key-" + uuid.uuid4().hex, "RT_BOB_KEY": "bob-key-" + uuid.uuid4().hex}
PEOPLE = {"callers": [{"name": "alice", "key_env": "RT_ALICE_KEY"}, {"name": "bob", "key_env": "RT_BOB_KEY"}]}
SCRIPT = Path(__file__).parent / "scripts" / "other_callers_data.py"
TENANTS = importlib.util.find_spec("a2a_wrapper.backends.tenants") is not None  # branch tenancy's pool


@dataclass
class Seen:
    mode: str
    secret: str
    notes_secret: str
    injected: str
    got: dict[str, str] = field(default_factory=dict)  # variant -> what bob got
    her_notes: str = ""
    her_history: str = ""
    her_state: str = ""
    walked: list[str] = field(default_factory=list)  # the folders bob's tool looked in for her files
    her_folder: str = ""  # the folder her notes are in, on the host


async def _bob_asks(bob: httpx.AsyncClient, served: Any, task: dict[str, Any], seen: Seen) -> None:
    """Every way bob's client names her task or context."""
    her_task, her_context = task["id"], task["contextId"]
    asks = {
        "a2a-get-her-task": ("GetTask", {"id": her_task, "historyLength": 50}),
        "a2a-list-tasks": ("ListTasks", {"pageSize": 100}),
        "a2a-list-her-context": ("ListTasks", {"contextId": her_context, "pageSize": 100}),
        "a2a-cancel-her-task": ("CancelTask", {"id": her_task}),
        "a2a-push-config-on-her-task": (
            "CreateTaskPushNotificationConfig",
            {"taskId": her_task, "config": {"url": "https://example.org/hook"}},
        ),
    }
    for name, (method, params) in asks.items():
        try:
            seen.got[name] = str(await rpc(bob, served.jsonrpc, method, params))
        except Exception as exc:  # a refusal of any shape is what is hoped for
            seen.got[name] = repr(exc)
    rest = await bob.get(f"{served.rest}/tasks/{her_task}", params={"historyLength": 50}, headers=V1)
    seen.got["rest-get-her-task"] = rest.text
    subscribed = await bob.post(
        served.jsonrpc,
        json={"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": her_task}},
        headers=V1,
    )
    seen.got["a2a-subscribe-to-her-task"] = subscribed.text
    injected = user_message(f"note for later: {seen.injected}", her_context)
    said = await stream(bob, served.jsonrpc, {"message": injected})
    seen.got["a2a-message-into-her-context"] = str(said)
    follow = user_message(f"and also {seen.injected}", her_context, her_task)
    seen.got["a2a-message-onto-her-task"] = str(await stream(bob, served.jsonrpc, {"message": follow}))


def _one(found: list[Path], what: str) -> Path:
    assert len(found) == 1, f"{what}: {found}"
    return found[0]


@pytest.fixture(scope="module", params=["default", "in_place"])
async def seen(opencode_binary, tmp_path_factory: pytest.TempPathFactory, request) -> AsyncIterator[Seen]:  # type: ignore[no-untyped-def]
    async with OfflineModel() as offline_model:  # the module's own (a session one was torn down between modules)
        state = tmp_path_factory.mktemp("tenants") / "state"
        found = Seen(
            request.param,
            f"alice-secret-{uuid.uuid4().hex}",
            f"alice-notes-{uuid.uuid4().hex}",
            f"bob-{uuid.uuid4().hex}",
        )
        workdir = state / "workspace"  # the project: worked in, or the source each context's copy is made from
        workdir.mkdir(parents=True, exist_ok=True)
        shutil.copy(SCRIPT, workdir / "look.py")
        with pytest.MonkeyPatch.context() as patch:
            for name, value in KEYS.items():
                patch.setenv(name, value)
            if request.param == "default":
                patch.delenv("A2A_WRAP_WORKSPACE__MODE", raising=False)  # the suite's in-place default (conftest)
            else:
                patch.setenv("A2A_WRAP_WORKSPACE__MODE", "in_place")
            settings = AgentSettings(
                card=CardSettings(name="two-callers"),
                server=ServerSettings(port=free_port()),
                backend=OpenCodeSettings(
                    binary=opencode_binary,
                    workdir=state / "workspace",
                    model=f"offline/{MODEL_ID}",
                    provider=ModelProvider(id="offline", base_url=offline_model.base_url, models=[MODEL_ID]),
                ),
                state_dir=state,
                auto_approve=True,
                auth=PEOPLE,
            )
            async with (
                httpx.AsyncClient(timeout=120, headers=bearer(KEYS["RT_ALICE_KEY"])) as alice,
                httpx.AsyncClient(timeout=120, headers=bearer(KEYS["RT_BOB_KEY"])) as bob,
                serving(settings, offline_model) as served,
            ):
                hers = await stream(
                    alice, served.jsonrpc, {"message": user_message(f"Keep this between us: {found.secret}")}
                )
                task = hers[0]["task"]
                notes = bash_params(f"echo {found.notes_secret} > alice-notes.txt", task["contextId"], "take notes")
                assert final_state(await stream(alice, served.jsonrpc, notes)) == "TASK_STATE_COMPLETED"
                assert (settings.workspace.mode == "per_task") == (request.param == "default")
                her_notes = _one(list(state.rglob("alice-notes.txt")), "her notes")
                his = await stream(bob, served.jsonrpc, bash_params("python3 look.py bob-found", description="look"))
                assert final_state(his) == "TASK_STATE_COMPLETED", his[-1]
                found.her_notes, found.her_folder = her_notes.read_text(), str(her_notes.parent)
                await _bob_asks(bob, served, task, found)
                history = await rpc(alice, served.jsonrpc, "GetTask", {"id": task["id"], "historyLength": 100})
                found.her_history = str(history)
                found.her_state = str(history.get("result", {}).get("status", {}).get("state"))
                later = await stream(
                    alice, served.jsonrpc, {"message": user_message("what did I say?", task["contextId"])}
                )
                found.her_history += str(later)
                bobs = _one(list(state.rglob("bob-found")), "what bob's tool found")
                found.walked = (bobs / "walked.txt").read_text().splitlines()
                for place in ("workspace.txt", "api.txt"):
                    found.got[f"tool-{place[:-4]}"] = (bobs / place).read_text(errors="replace")
                found.got["tool-storage"] = "\n".join(
                    p.read_bytes().decode(errors="replace") for p in (bobs / "storage").rglob("*") if p.is_file()
                )
        yield found


SHARED_WORKSPACE = (
    "tenants: working in place (workspace.mode: in_place), every caller's tools work in the one tree, so bob reads "
    "and overwrites what alice's tool wrote there; the default, a workspace per task, gives each context its own "
    "copy, bound into its caller's sandbox alone (the agent warns at start when in place with several callers)"
)
ONE_BACKEND = "tenants: one backend serves both callers on main, {}; branch tenancy gives each caller a backend"
EXPECTED = {
    "tool-storage": None if TENANTS else ONE_BACKEND.format("so her conversation is in the storage bob's tool reads"),
    "tool-api": None if TENANTS else ONE_BACKEND.format("whose API, with the password tools inherit, lists hers"),
}


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(v, marks=pytest.mark.xfail(strict=True, reason=EXPECTED[v])) if EXPECTED.get(v) else v
        for v in (
            "tool-workspace",
            "tool-storage",
            "tool-api",
            "a2a-get-her-task",
            "a2a-list-tasks",
            "a2a-list-her-context",
            "a2a-cancel-her-task",
            "a2a-push-config-on-her-task",
            "rest-get-her-task",
            "a2a-subscribe-to-her-task",
            "a2a-message-into-her-context",
            "a2a-message-onto-her-task",
        )
    ],
)
def test_bob_gets_nothing_of_alices(seen: Seen, variant: str, request: pytest.FixtureRequest) -> None:
    if variant == "tool-workspace":
        _shared_in_place(seen, request)
    got = seen.got[variant]
    assert seen.secret not in got and seen.notes_secret not in got, f"{variant}: {got[:300]}"


def test_bobs_tool_looked_where_her_files_are(seen: Seen) -> None:
    """The attack was made: his tool walked the folder her copy is in (the folder of every caller's copies), or in
    place, the one tree; it just cannot see her files there."""
    assert str(Path(seen.her_folder).parents[1] if seen.mode == "default" else seen.her_folder) in seen.walked


def test_bobs_words_never_reach_her_context_nor_her_task(seen: Seen) -> None:
    assert seen.injected not in seen.her_history, seen.her_history[:500]
    assert seen.her_state == "TASK_STATE_COMPLETED", "her task was not cancelled by bob"


def test_bob_cannot_change_alices_files(seen: Seen, request: pytest.FixtureRequest) -> None:
    _shared_in_place(seen, request)
    assert seen.her_notes.strip() == seen.notes_secret


def _shared_in_place(seen: Seen, request: pytest.FixtureRequest) -> None:
    if seen.mode == "in_place":
        request.applymarker(pytest.mark.xfail(strict=True, reason=SHARED_WORKSPACE))
