"""ListTasks pages: by count (a2a-sdk's 50 by default, at most 100) and by bytes (a page ends once its tasks pass
4 MiB encoded); every nextPageToken continues where its page ended, and a walk through the pages meets every task
once. Real agents: one whose tasks come from real turns, one started on a state folder filled beforehand with
large answers (a2a-sdk's own store writes them, as the agent's would)."""

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabaseTaskStore
from a2a.types import Artifact, Part, Task, TaskState, TaskStatus

from a2a_wrapper.frontend.handler.task_pages import tasks_within
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.state.database import open_database
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import V1, rpc, send

INVALID_PARAMS = -32602


def sized(size: int) -> Task:
    return Task(id="t", artifacts=[Artifact(artifact_id="a", parts=[Part(text="x" * size)])])


@pytest.mark.parametrize(
    ("sizes", "fitting"),
    [([], 0), ([10, 10, 10], 3), ([40, 40, 40], 2), ([500], 1), ([500, 10], 1), ([10, 500], 1)],
)
def test_a_page_keeps_the_tasks_within_its_bytes_and_at_least_one(sizes: list[int], fitting: int) -> None:
    budget = 2 * sized(40).ByteSize()
    assert tasks_within([sized(size) for size in sizes], budget) == fitting


async def walk(http: httpx.AsyncClient, url: str, params: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Every page, following nextPageToken to the end."""
    pages: list[list[dict[str, Any]]] = []
    token = None
    while token != "":
        answer = await rpc(http, url, "ListTasks", {**params, **({"pageToken": token} if token else {})})
        result = answer["result"]
        pages.append(result.get("tasks", []))
        token = result.get("nextPageToken", "")
        assert len(pages) < 50, "the pages never end"
    return pages


@pytest.mark.slow
async def test_list_tasks_pages_by_count_and_refuses_a_page_past_a_hundred(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    async with asyncio.timeout(120):
        sent = {(await send(http, agent.jsonrpc, f"page {n}"))["id"] for n in range(7)}
        pages = await walk(http, agent.jsonrpc, {"pageSize": 3})
        rest = await http.get(agent.rest + "/tasks", params={"pageSize": 3}, headers=V1)
        too_big = await rpc(http, agent.jsonrpc, "ListTasks", {"pageSize": 101})
    assert [len(page) for page in pages] == [3, 3, 1]
    assert {task["id"] for page in pages for task in page} == sent
    assert rest.status_code == 200 and len(rest.json()["tasks"]) == 3 and rest.json()["nextPageToken"]
    assert too_big["error"]["code"] == INVALID_PARAMS and too_big["error"]["message"] == "maximum page size is 100"


async def fill(state: Path, answers: int, size: int) -> set[str]:
    """Tasks with an answer of `size` bytes each, written where the agent will find them."""
    await asyncio.to_thread(state.mkdir, parents=True, exist_ok=True)
    engine = open_database(state / "state.db")
    store = DatabaseTaskStore(engine)
    await store.initialize()
    ids = set()
    for _ in range(answers):
        task = Task(id=uuid.uuid4().hex, context_id="filled", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))
        task.artifacts.append(Artifact(artifact_id="response", name="response", parts=[Part(text="x" * size)]))
        task.status.timestamp.GetCurrentTime()
        await store.save(task, ServerCallContext())
        ids.add(task.id)
    await engine.dispose()
    return ids


@pytest.mark.slow
async def test_pages_with_their_answers_end_within_four_mebibytes(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    ids = await fill(tmp_path / "filled", answers=9, size=1_500_000)
    async with asyncio.timeout(120), serving(make_settings(state_dir=tmp_path / "filled"), offline_model) as served:
        pages = await walk(http, served.jsonrpc, {"pageSize": 10, "includeArtifacts": True})
        without = await rpc(http, served.jsonrpc, "ListTasks", {"pageSize": 10})
    assert [len(page) for page in pages] == [2, 2, 2, 2, 1]
    assert sorted(task["id"] for page in pages for task in page) == sorted(ids)
    assert len(without["result"]["tasks"]) == 9  # without the answers, all fit
