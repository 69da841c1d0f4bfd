"""Files the agent changes become diff artifacts, one per path, replaced as the file changes again."""

import json

import httpx
import pytest

from tests.conftest import ServedAgent
from tests.helpers.a2a_wire import final_state, stream, user_message

pytestmark = pytest.mark.slow


def artifacts_named(events: list[dict], prefix: str) -> list[dict]:
    return [
        event["artifactUpdate"]["artifact"]
        for event in events
        if "artifactUpdate" in event and event["artifactUpdate"]["artifact"].get("name", "").startswith(prefix)
    ]


async def test_an_edited_file_becomes_one_diff_artifact(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    target = agent.workdir / "notes.txt"
    target.write_text("first line\nsecond line\n")
    read = json.dumps({"filePath": str(target)})
    edit = json.dumps({"filePath": str(target), "oldString": "second line", "newString": "changed line"})
    events = await stream(http, agent.jsonrpc, {"message": user_message(f"[[tool:read {read}]]")})
    context = events[-1]["statusUpdate"]["contextId"]
    events = await stream(http, agent.jsonrpc, {"message": user_message(f"[[tool:edit {edit}]]", context)})
    assert final_state(events) == "TASK_STATE_COMPLETED"
    assert target.read_text() == "first line\nchanged line\n"
    [diff] = artifacts_named(events, "diff ")
    assert diff["name"] == f"diff {target}"
    [part] = diff["parts"]
    assert part["mediaType"] == "text/x-diff"
    assert "-second line" in part["text"] and "+changed line" in part["text"]
