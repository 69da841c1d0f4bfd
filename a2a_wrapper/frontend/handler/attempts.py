"""First attempts of messages, from their ledger claim until their task holds them.

Between the claim and the task's first save a retry cannot be answered from the store: it waits for the attempt
to settle, that is for the task to be saved with the message in its history (the message was accepted) or for the
attempt to end without that (it was not, and the retry runs as a first attempt itself). The task store the SDK
writes through (`watching`) reports each save here; the context builder (`ClaimedTaskIds`) gives a new message
the task id its claim recorded, so the ledger names the task before the task exists.
"""

import asyncio
from dataclasses import dataclass, field

from a2a.server.agent_execution import RequestContext, RequestContextBuilder, SimpleRequestContextBuilder
from a2a.server.cluster import StoredTask, TaskVersion, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.tasks import TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, SendMessageRequest, Task

from a2a_wrapper.state.message_ledger import MessageKey

CLAIMED_TASK = "a2a_wrapper.claimed_task_id"  # the request's ServerCallContext.state key


@dataclass(eq=False)
class Attempt:
    key: MessageKey
    task_id: str
    accepted: bool = False  # its task was saved holding its message
    settled: asyncio.Event = field(default_factory=asyncio.Event)


class Attempts:
    """The attempts under way in this process: at most one per message key."""

    def __init__(self) -> None:
        self._by_key: dict[MessageKey, Attempt] = {}
        self._by_task: dict[str, list[Attempt]] = {}

    def running(self, key: MessageKey) -> Attempt | None:
        return self._by_key.get(key)

    def begin(self, key: MessageKey, task_id: str) -> Attempt:
        assert key not in self._by_key, "one attempt per key: wait for the running one first"
        attempt = Attempt(key, task_id)
        self._by_key[key] = attempt
        self._by_task.setdefault(task_id, []).append(attempt)
        return attempt

    def end(self, attempt: Attempt) -> None:
        """Settles the attempt (idempotent); retries waiting on it go on."""
        if self._by_key.get(attempt.key) is attempt:
            del self._by_key[attempt.key]
        waiting = self._by_task.get(attempt.task_id, [])
        if attempt in waiting:
            waiting.remove(attempt)
            if not waiting:
                del self._by_task[attempt.task_id]
        attempt.settled.set()

    def saw(self, task: Task) -> None:
        """A task was saved: the attempts whose message its history holds are accepted."""
        waiting = self._by_task.get(task.id)
        if not waiting:
            return
        held = {message.message_id for message in task.history}
        for attempt in [a for a in waiting if a.key.message_id in held]:
            attempt.accepted = True
            self.end(attempt)

    def watching(self, store: TaskStore | VersionedTaskStore) -> TaskStore | VersionedTaskStore:
        """`store`, telling these attempts of every save (a versioned store, shared state's, stays versioned)."""
        if isinstance(store, VersionedTaskStore):
            return _WatchedVersions(store, self)
        return _Watched(store, self)


class _Watched(TaskStore):
    def __init__(self, store: TaskStore, attempts: Attempts) -> None:
        self._store = store
        self._attempts = attempts

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await self._store.save(task, context)
        self._attempts.saw(task)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        return await self._store.get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        return await self._store.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await self._store.delete(task_id, context)


class _WatchedVersions(VersionedTaskStore):
    def __init__(self, store: VersionedTaskStore, attempts: Attempts) -> None:
        self._store = store
        self._attempts = attempts

    async def save(
        self,
        task: Task,
        *,
        event: Event | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        version = await self._store.save(task, event=event, prev=prev, prev_version=prev_version, context=context)
        self._attempts.saw(task)
        return version

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        return await self._store.get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        return await self._store.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await self._store.delete(task_id, context)


class ClaimedTaskIds(RequestContextBuilder):
    """A new message's task gets the id its ledger claim recorded (in the call's state), not a fresh one."""

    def __init__(self, builder: RequestContextBuilder | None = None) -> None:
        self._builder = builder or SimpleRequestContextBuilder(should_populate_referred_tasks=False, task_store=None)

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        claimed = task_id or context.state.get(CLAIMED_TASK)
        return await self._builder.build(context, params, claimed, context_id, task)
