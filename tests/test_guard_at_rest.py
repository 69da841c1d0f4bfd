"""Nothing secret is kept in clear: audit entries and tasks are redacted on their way into the SQLite file."""

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from a2a.helpers import new_data_part, new_text_part
from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabaseTaskStore
from a2a.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf.json_format import MessageToDict
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from a2a_wrapper.state.audit import AuditEntry, AuditLog, recent
from a2a_wrapper.state.task_store import WriteBehindTaskStore, kept
from tests.helpers.secrets import AWS_ID, GITHUB, OPENSSH, marker

ENTRY = AuditEntry(1.0, "agent", "ctx-1", "task-1", "alice", "bash", "execute", "", "allow", "agent:ok", "shield", 2.0)
TARGETS = [
    (f"echo {GITHUB}", f"echo {marker('github-token')}"),
    (
        'curl -H "Authorization: Bearer abcdef1234567890abcdef" https://api.example.com',
        f'curl -H "Authorization: Bearer {marker("auth-header")}" https://api.example.com',
    ),
    (
        "https://deploy:hunter42@git.example.com/repo.git",
        f"https://deploy:{marker('url-password')}@git.example.com/repo.git",
    ),
    ("/work/.env, /work/keys", "/work/.env, /work/keys"),
]


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    yield engine
    await engine.dispose()


def on_disk(tmp_path: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(tmp_path.glob("state.db*")))


@pytest.mark.parametrize(("target", "kept"), TARGETS)
async def test_an_audit_target_is_kept_redacted(engine: AsyncEngine, tmp_path: Path, target: str, kept: str) -> None:
    audit = AuditLog(engine)
    await audit.initialize()
    await audit.record(dataclasses.replace(ENTRY, target=target))
    await engine.dispose()
    assert recent(tmp_path / "state.db", 1) == [dataclasses.replace(ENTRY, target=kept)]
    assert target == kept or target.encode() not in on_disk(tmp_path)


KEY = "\n".join(OPENSSH)


def task_holding_secrets() -> Task:
    """A task with a credential in each place a task keeps text: parts of every kind, and metadata."""
    asked = Message(
        message_id="m-1",
        role=Role.ROLE_USER,
        parts=[
            new_text_part(f"deploy with {GITHUB}"),
            Part(raw=f"AWS_ACCESS_KEY_ID={AWS_ID}\n".encode(), filename=".env", media_type="text/plain"),
            Part(url="https://deploy:hunter42@git.example.com/repo.git"),
            new_data_part({"env": {"GITHUB_TOKEN": "plain-looking"}, "argv": ["push", [f"--auth={GITHUB}"]], "n": 2}),
        ],
    )
    answer = Message(message_id="m-2", role=Role.ROLE_AGENT, parts=[new_text_part(f"I used {AWS_ID}")])
    task = Task(
        id="task-1",
        context_id="ctx-1",
        status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED, message=answer),
        history=[asked],
        artifacts=[Artifact(artifact_id="response-1", name="response", parts=[new_text_part(f"key:\n{KEY}")])],
    )
    task.metadata.update({"a2a-wrapper": {"thought": f"the token is {GITHUB}"}})
    task.artifacts[0].metadata.update({"password": "correct horse"})
    return task


SECRETS = [GITHUB, AWS_ID, "hunter42", "plain-looking", OPENSSH[1], "correct horse"]


def test_a_task_is_kept_with_every_part_and_metadata_redacted() -> None:
    task = task_holding_secrets()
    copy = kept(task)
    assert not [secret for secret in SECRETS if secret.encode() in copy.SerializeToString()]
    assert [part.WhichOneof("content") for part in copy.history[0].parts] == ["text", "raw", "url", "data"]
    assert copy.history[0].parts[1].raw == f"AWS_ACCESS_KEY_ID={marker('aws-access-key')}\n".encode()
    assert copy.artifacts[0].parts[0].text == f"key:\n{marker('private-key')}"
    data = MessageToDict(copy.history[0].parts[3].data)
    assert data == {
        "env": {"GITHUB_TOKEN": "[REDACTED:credential]"},
        "argv": ["push", [f"--auth={marker('github-token')}"]],
        "n": 2,
    }
    assert (copy.id, copy.context_id, copy.status.state) == (task.id, task.context_id, task.status.state)
    assert GITHUB in task.history[0].parts[0].text, "a copy: the task itself is left alone"


def test_an_answer_streamed_in_chunks_is_kept_whole_and_redacted_when_a_credential_spans_two_chunks() -> None:
    chunks = [Part(text=f"token {GITHUB[:12]}"), Part(text=f"{GITHUB[12:]} done"), Part(text="")]
    task = Task(id="task-3", artifacts=[Artifact(artifact_id="answer", parts=chunks)])
    copy = kept(task)
    assert [part.text for part in copy.artifacts[0].parts] == [f"token {marker('github-token')} done"]
    assert [part.text for part in task.artifacts[0].parts] == [chunk.text for chunk in chunks], "left alone"


def test_a_binary_file_and_absent_fields_are_left_as_they_are() -> None:
    task = Task(id="task-2", history=[Message(message_id="m-1", parts=[Part(raw=b"\x89PNG\r\n\x1a\n\xff")])])
    assert kept(task) == task


async def test_the_task_store_keeps_and_answers_only_the_redacted_task(engine: AsyncEngine, tmp_path: Path) -> None:
    database = DatabaseTaskStore(engine)
    await database.initialize()
    store = WriteBehindTaskStore(database, engine, set())
    context = ServerCallContext()
    await store.save(task_holding_secrets(), context)
    from_memory = await store.get("task-1", context)  # not written yet
    await store.close()
    from_disk = await store.get("task-1", context)
    assert from_memory == from_disk == kept(task_holding_secrets())
    await engine.dispose()
    stored = on_disk(tmp_path)
    assert b"task-1" in stored and not [secret for secret in SECRETS if secret.encode() in stored]
