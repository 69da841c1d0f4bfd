"""The turn machinery driven through a2a-sdk's own request handler, with a small hand-written backend.

`FakeBackend` implements the Backend and Turn contracts with scripted turns (the prompt names the script), so
the paths that otherwise need a real agent and a model run in a second: a pause for a person and its answer,
the deadline, a second message waiting for its context, a lost session reopened, cancel and shutdown.
"""

import asyncio
import gc
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from a2a.helpers import new_text_part
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from sqlalchemy.ext.asyncio import create_async_engine

from a2a_wrapper.backends.base import Batch, Prompt, Session
from a2a_wrapper.config.backends import OpenCodeSettings
from a2a_wrapper.config.settings import AgentSettings, CardSettings, SessionSettings
from a2a_wrapper.errors import BackendUnavailable, SessionGone
from a2a_wrapper.events import Done, Permission, Question, Text, Thought, Usage
from a2a_wrapper.frontend.app import request_handler
from a2a_wrapper.frontend.card import build_card
from a2a_wrapper.frontend.executor import TurnExecutor
from a2a_wrapper.frontend.metrics import AgentMetrics
from a2a_wrapper.frontend.turns import SHUTTING_DOWN, ContextLocks, Turns
from a2a_wrapper.guard import GuardSettings
from a2a_wrapper.permissions.gate import EXPIRED, PERSON_DENIED, PermissionGate
from a2a_wrapper.permissions.policy import Policy
from a2a_wrapper.sandbox.control_watch import ControlWatch
from a2a_wrapper.shield import Shield, ShieldConfig
from a2a_wrapper.state.audit import AuditLog, recent
from a2a_wrapper.state.context_rules import ContextRules
from a2a_wrapper.state.sessions import SessionMap

CALL = ServerCallContext()
HELD_AFTER = {"words, usage, hold": Usage(input_tokens=3, output_tokens=2), "words, thought, hold": Thought(delta="hm")}


class FakeTurn:
    """Scripts by prompt: `ask` (a shell call the rules ask about), `question`, `hold` (runs until released or
    aborted), the HELD_AFTER ones (text and another event in one batch, then `hold`); anything else is echoed.
    Records what the front end sent it."""

    def __init__(self, backend: "FakeBackend", session: Session, prompt: Prompt) -> None:
        self._backend = backend
        self.session = session
        self.prompt = prompt
        self.replies: list[tuple[str, str, str]] = []
        self.answers: list[tuple[str, str | None]] = []
        self.aborted = False
        self.released = False
        self.closed = False  # its iterator's clean-up ran
        self.started = asyncio.Event()
        self._woken = asyncio.Event()

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._closing(self._batches())

    async def _closing(self, batches: AsyncGenerator[Batch]) -> AsyncGenerator[Batch]:
        try:
            async for batch in batches:
                yield batch
        finally:
            self.closed = True
            if self._backend.cleanup_fails:
                raise RuntimeError("the clean-up failed")

    async def _batches(self) -> AsyncGenerator[Batch]:
        if self.session.id in self._backend.lost:
            raise SessionGone(f"session {self.session.id} is gone")
        self.started.set()
        self._backend.changed.set()
        script = self.prompt.text
        if script == "ask":
            yield (Text(delta="asking. "), Permission(id="p1", kind="execute", tool="bash", command="touch x"))
            if await self._wake():
                _, decision, reason = self.replies[-1]
                yield (Text(delta=f"{decision}: {reason}"),)
        elif script == "question":
            yield (Question(id="q1", text="Which colour?"),)
            if await self._wake():
                yield (Text(delta=f"colour: {self.answers[-1][1]}"),)
        elif script == "hold":
            while not (self.released or self.aborted):
                await self._wake()
        elif script in HELD_AFTER:
            yield (Text(delta="the first words"), HELD_AFTER[script])
            while not (self.released or self.aborted):
                await self._wake()
        else:
            yield (Text(delta=f"echo: {script}"),)
        yield (Done(outcome="canceled" if self.aborted else "completed"),)

    async def _wake(self) -> bool:
        """Waits for a reply, an answer, a release or an abort; False when aborted."""
        await self._woken.wait()
        self._woken.clear()
        return not self.aborted

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        self.replies.append((permission_id, decision, reason))
        self._woken.set()

    async def answer(self, question_id: str, text: str | None) -> None:
        self.answers.append((question_id, text))
        self._woken.set()

    async def abort(self) -> None:
        self.aborted = True
        self._woken.set()

    def release(self) -> None:
        self.released = True
        self._woken.set()


class FakeBackend:
    kind = "fake"
    restarts = 0

    def __init__(self) -> None:
        self.turns: list[FakeTurn] = []
        self.lost: set[str] = set()  # sessions the backend no longer has
        self.cleanup_fails = False  # a turn's clean-up raises once it has ended
        self.opened = 0
        self.unreachable = False  # opening a session fails as with a backend that is down
        self.changed = asyncio.Event()  # a turn was made or started

    async def running(self, index: int) -> FakeTurn:
        """The index-th turn, once it has started."""
        while len(self.turns) <= index or not self.turns[index].started.is_set():
            await self.changed.wait()
            self.changed.clear()
        return self.turns[index]

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def health(self) -> dict[str, Any]:
        return {"healthy": True}

    async def open_session(self, context_key: str, resume: str | None = None) -> Session:
        if self.unreachable:
            raise BackendUnavailable("the fake backend is down")
        if resume is not None and resume not in self.lost:
            return Session(resume, created=False)
        self.opened += 1
        return Session(f"s{self.opened}", created=True)

    async def close_session(self, session_id: str) -> None: ...

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        return 0

    def turn(self, session: Session, prompt: Prompt) -> FakeTurn:
        self.turns.append(FakeTurn(self, session, prompt))
        self.changed.set()
        return self.turns[-1]


@dataclass
class Agent:
    backend: FakeBackend
    handler: DefaultRequestHandler
    turns: Turns
    database: Path

    async def send(self, text: str, context_id: str | None = None, task_id: str | None = None) -> Task:
        """SendMessage; the task once it ends or waits for a person."""
        return await self._send(text, context_id, task_id, SendMessageConfiguration())

    async def start(self, text: str, context_id: str | None = None) -> Task:
        """SendMessage returning at once, with the task under way."""
        return await self._send(text, context_id, None, SendMessageConfiguration(return_immediately=True))

    async def _send(
        self, text: str, context_id: str | None, task_id: str | None, configuration: SendMessageConfiguration
    ) -> Task:
        message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[new_text_part(text)])
        if context_id:
            message.context_id = context_id
        if task_id:
            message.task_id = task_id
        result = await self.handler.on_message_send(
            SendMessageRequest(message=message, configuration=configuration), CALL
        )
        assert isinstance(result, Task)
        return result

    async def task(self, task_id: str) -> Task:
        task = await self.handler.on_get_task(GetTaskRequest(id=task_id), CALL)
        assert task is not None
        return task

    async def ended(self, task_id: str) -> Task:
        """The task once it is in a final state (the deadline ends it outside any request)."""
        while (task := await self.task(task_id)).status.state not in FINAL:  # noqa: ASYNC110 (as a caller polls)
            await asyncio.sleep(0.02)
        return task


FINAL = {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED}
AgentFactory = Callable[..., Awaitable[Agent]]


@pytest.fixture
async def make_agent(tmp_path: Path) -> AsyncIterator[AgentFactory]:
    """The front end as agent.py assembles it, on a FakeBackend; every test runs under a deadline."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    built: list[Agent] = []

    async def make(ask_timeout: float = 60) -> Agent:
        settings = AgentSettings(
            card=CardSettings(name="fake-agent"), backend=OpenCodeSettings(workdir=tmp_path / "ws"), state_dir=tmp_path
        )
        backend = FakeBackend()
        audit = AuditLog(engine)
        await audit.initialize()
        locks = ContextLocks()
        sessions = SessionMap(engine, backend, SessionSettings(), busy=locks.busy)
        await sessions.initialize()
        context_rules = ContextRules(engine)
        await context_rules.initialize()
        metrics = AgentMetrics()
        policy = Policy(Shield(ShieldConfig(ask_timeout=ask_timeout), tmp_path / "ws"))
        gate = PermissionGate(policy, context_rules, audit, metrics.decided, "fake-agent")
        (tmp_path / "ws").mkdir(exist_ok=True)
        watch = ControlWatch(tmp_path / "ws", "fake-agent", audit)
        turns = Turns(backend, sessions, gate, locks, turn_timeout=30, watch=watch)
        executor = TurnExecutor(turns, GuardSettings(), metrics)
        handler = request_handler(build_card(settings), executor, InMemoryTaskStore())
        built.append(Agent(backend, handler, turns, tmp_path / "state.db"))
        return built[-1]

    async with asyncio.timeout(10):
        yield make
        for agent in built:
            await agent.turns.shutdown(grace=2)
            await agent.handler.aclose()
    await engine.dispose()


def answer_of(task: Task) -> str:
    return "".join(part.text for artifact in task.artifacts if artifact.name == "response" for part in artifact.parts)


def status_text(task: Task) -> str:
    return " ".join(part.text for part in task.status.message.parts)


async def test_an_ask_pauses_in_input_required_and_a_yes_resumes_the_turn(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    asked = await agent.send("ask")
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "Approval needed" in status_text(asked)
    done = await agent.send("yes", asked.context_id, asked.id)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    [turn] = agent.backend.turns
    assert [(id_, decision) for id_, decision, _ in turn.replies] == [("p1", "allow")]
    assert answer_of(done) == "asking. allow: bash allowed by person"


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The garbage collector off: a turn's clean-up must run because the turn ended, not because it was found."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("no_collector")
async def test_a_turn_is_cleaned_up_when_it_ends_not_when_the_collector_finds_it(make_agent: AgentFactory) -> None:
    # A backend turn's clean-up (OpenCode's event subscription, Copilot's session hooks) is in its iterator's
    # `finally`; left suspended after its last batch, it ran only once the collector reached it.
    agent = await make_agent()
    done = await agent.send("hello")
    asked = await agent.send("ask")
    [ended, paused] = agent.backend.turns
    assert done.status.state == TaskState.TASK_STATE_COMPLETED and ended.closed
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED and not paused.closed  # it goes on later
    resumed = await agent.send("yes", asked.context_id, asked.id)
    assert resumed.status.state == TaskState.TASK_STATE_COMPLETED and paused.closed


async def test_a_clean_up_that_fails_after_the_end_leaves_the_task_as_it_ended(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    agent = await make_agent()
    agent.backend.cleanup_fails = True
    done = await agent.send("hello")
    assert done.status.state == TaskState.TASK_STATE_COMPLETED and answer_of(done) == "echo: hello"
    assert (await agent.task(done.id)).status.state == TaskState.TASK_STATE_COMPLETED
    assert "clean-up after the turn of task" in caplog.text
    agent.backend.cleanup_fails = False
    assert (await agent.send("again", done.context_id)).status.state == TaskState.TASK_STATE_COMPLETED  # context free


async def test_a_no_denies_with_the_persons_sentence(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    asked = await agent.send("ask")
    done = await agent.send("no", asked.context_id, asked.id)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert agent.backend.turns[0].replies == [("p1", "deny", PERSON_DENIED)]
    assert answer_of(done).endswith(f"deny: {PERSON_DENIED}")


async def test_no_answer_by_the_deadline_denies_on_the_live_turn_and_is_audited(make_agent: AgentFactory) -> None:
    agent = await make_agent(ask_timeout=0.3)
    asked = await agent.send("ask")
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    done = await agent.ended(asked.id)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert agent.backend.turns[0].replies == [("p1", "deny", EXPIRED)]
    assert answer_of(done).endswith(f"deny: {EXPIRED}")
    [entry] = recent(agent.database, 10)
    assert (entry.decision, entry.decided_by, entry.rule) == ("deny", "deadline", "person:deadline")
    assert entry.wait_ms >= 300


async def test_a_step_of_the_wall_clock_neither_expires_an_approval_nor_holds_it_past_its_deadline(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A person's time to answer runs on the monotonic clock; NTP may step the wall clock meanwhile.
    wall = time.time
    agent = await make_agent(ask_timeout=0.5)
    asked = await agent.send("ask")
    monkeypatch.setattr(time, "time", lambda: wall() + 3600)  # an hour forward: the answer is still in time
    done = await agent.send("yes", asked.context_id, asked.id)
    assert answer_of(done).endswith("allow: bash allowed by person")
    monkeypatch.setattr(time, "time", lambda: wall() - 3600)  # an hour back: the deadline still comes on time
    asked = await agent.send("ask", done.context_id)
    done = await agent.ended(asked.id)  # within the fixture's 10 s
    assert answer_of(done).endswith(f"deny: {EXPIRED}")
    [waited] = [entry.wait_ms for entry in recent(agent.database, 10) if entry.decided_by == "deadline"]
    assert 500 <= waited < 5000


async def test_a_question_pauses_and_any_text_answers_it(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    asked = await agent.send("question")
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    done = await agent.send("blue", asked.context_id, asked.id)
    assert answer_of(done) == "colour: blue"
    assert agent.backend.turns[0].answers == [("q1", "blue")]


@pytest.mark.parametrize("script", HELD_AFTER)
async def test_text_goes_out_when_its_batch_ends_with_an_event_that_sends_nothing(
    make_agent: AgentFactory, script: str
) -> None:
    agent = await make_agent()
    running = await agent.start(script)
    turn = await agent.backend.running(0)
    async with asyncio.timeout(2):  # before the turn ends: the text does not wait for the end
        while not answer_of(task := await agent.task(running.id)):  # noqa: ASYNC110 (as a caller polls)
            await asyncio.sleep(0.02)
    assert task.status.state == TaskState.TASK_STATE_WORKING
    sent = answer_of(task)  # the guard keeps back a tail that might begin a credential until more text or the end
    assert "the first words".startswith(sent) and len(sent) >= len("the first"), sent
    turn.release()
    assert answer_of(await agent.ended(running.id)) == "the first words"


async def test_a_second_message_on_a_context_waits_for_the_running_turn(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    first = await agent.start("hold")
    await agent.backend.running(0)
    second = asyncio.create_task(agent.send("after", first.context_id))
    await asyncio.sleep(0.2)
    assert len(agent.backend.turns) == 1, "the second turn must not start while the first runs"
    agent.backend.turns[0].release()
    assert answer_of(await second) == "echo: after"
    assert (await agent.ended(first.id)).status.state == TaskState.TASK_STATE_COMPLETED
    assert [turn.session.id for turn in agent.backend.turns] == ["s1", "s1"], "one context, one session"


async def test_a_task_is_working_at_once_when_its_turn_starts_and_submitted_while_it_waits(
    make_agent: AgentFactory,
) -> None:
    agent = await make_agent()
    first = await agent.start("hold")
    assert first.status.state == TaskState.TASK_STATE_SUBMITTED, "its context's session is opened first"
    turn = await agent.backend.running(0)
    queued = await agent.start("after", first.context_id)
    assert queued.status.state == TaskState.TASK_STATE_SUBMITTED and len(agent.backend.turns) == 1
    turn.release()
    assert answer_of(await agent.ended(queued.id)) == "echo: after"
    third = await agent.start("hold", first.context_id)
    assert third.status.state == TaskState.TASK_STATE_WORKING and third.status.HasField("timestamp")
    assert dict(third.metadata["a2a-wrapper"]) == {"session": "s1", "sessionRecreated": False}
    assert [message.parts[0].text for message in third.history] == ["hold"]
    (await agent.backend.running(2)).release()
    ended = await agent.ended(third.id)
    assert ended.status.state == TaskState.TASK_STATE_COMPLETED and ended.metadata["a2a-wrapper"]["session"] == "s1"


async def test_a_turn_whose_session_cannot_open_fails_its_new_task_with_a_sentence(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    agent.backend.unreachable = True
    failed = await agent.send("hello")
    assert failed.status.state == TaskState.TASK_STATE_FAILED
    assert status_text(failed) == "The backend could not run the turn: the fake backend is down"
    assert [message.parts[0].text for message in failed.history][:1] == ["hello"]
    assert not agent.backend.turns


async def test_a_session_the_backend_lost_is_reopened_once(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    first = await agent.send("one")
    agent.backend.lost.add("s1")
    again = await agent.send("two", first.context_id)
    assert answer_of(again) == "echo: two"
    assert [turn.session.id for turn in agent.backend.turns] == ["s1", "s1", "s2"]


async def test_cancel_aborts_the_turn_and_the_task_stays_canceled(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    running = await agent.start("hold")
    turn = await agent.backend.running(0)
    canceled = await agent.handler.on_cancel_task(CancelTaskRequest(id=running.id), CALL)
    assert canceled is not None and canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert turn.aborted
    await asyncio.sleep(0.1)
    assert (await agent.task(running.id)).status.state == TaskState.TASK_STATE_CANCELED


async def test_a_control_file_planted_during_a_turn_is_removed_and_the_task_says_so(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    agent = await make_agent()
    running = await agent.start("hold")
    turn = await agent.backend.running(0)
    (tmp_path / "ws" / "opencode.json").write_text("{}")  # while the turn runs
    turn.release()
    ended = await agent.ended(running.id)
    assert not (tmp_path / "ws" / "opencode.json").exists()
    assert "removed what the turn created or changed: opencode.json" in status_text(ended)
    assert ended.metadata["a2a-wrapper"]["controlFiles"]["removed"] == ["opencode.json"]


@pytest.mark.parametrize("script", ["hold", "ask"])
async def test_a_canceled_turns_control_files_are_removed_and_audited(
    make_agent: AgentFactory, tmp_path: Path, script: str
) -> None:
    agent = await make_agent()
    started = await (agent.start(script) if script == "hold" else agent.send(script))
    await agent.backend.running(0)  # its snapshot taken
    (tmp_path / "ws" / ".vscode").mkdir()
    (tmp_path / "ws" / ".vscode" / "tasks.json").write_text("{}")
    await agent.handler.on_cancel_task(CancelTaskRequest(id=started.id), CALL)
    await agent.turns.shutdown(grace=2)  # waits for the check of a turn whose request the cancel ended
    assert not (tmp_path / "ws" / ".vscode").exists()
    rows = [entry for entry in recent(agent.database, 20) if entry.tool == "control-files"]
    assert [(row.target, row.task_id, row.rule) for row in rows] == [
        (".vscode", started.id, "built-in:code-outside-tool-calls:removed")
    ]


@pytest.mark.usefixtures("no_collector")
async def test_cancel_while_waiting_for_a_person_denies_and_aborts(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    asked = await agent.send("ask")
    canceled = await agent.handler.on_cancel_task(CancelTaskRequest(id=asked.id), CALL)
    assert canceled is not None and canceled.status.state == TaskState.TASK_STATE_CANCELED
    turn = agent.backend.turns[0]
    assert turn.aborted and [decision for _, decision, _ in turn.replies] == ["deny"]
    assert turn.closed  # its clean-up ran with the cancel, not when the collector found it


async def test_shutdown_ends_a_running_turn_with_a_sentence(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    running = await agent.start("hold")
    await agent.backend.running(0)
    await agent.turns.shutdown(grace=2)
    ended = await agent.ended(running.id)
    assert ended.status.state == TaskState.TASK_STATE_FAILED
    assert status_text(ended) == SHUTTING_DOWN
    assert agent.backend.turns[0].aborted


@pytest.mark.usefixtures("no_collector")
async def test_shutdown_cleans_up_a_turn_paused_for_a_person(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    asked = await agent.send("ask")
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    await agent.turns.shutdown(grace=2)
    turn = agent.backend.turns[0]
    assert turn.aborted and turn.closed and [decision for _, decision, _ in turn.replies] == ["deny"]
