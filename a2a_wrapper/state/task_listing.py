"""ListTasks answered off the event loop: a2a-sdk's own database store, on a thread and a connection of its own.

The SDK's `DatabaseTaskStore.list` turns every row of a page into protobuf in Python, on the loop that also answers
/health and every stream: a page of 100 tasks, ten of them with a 1 MB answer, held the loop 400-500 ms
(measured). Here the same query runs on a thread with its own event loop and engine on the same SQLite file (WAL:
readers do not wait for the writer), so the agent's loop keeps running while it does; saved versions not yet
written are flushed first, as the write-behind store's own `list` does. Filters, order, page tokens and owner
scoping are the SDK's, unchanged; saves, reads and deletes go to the write-behind store as before.
"""

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabaseTaskStore, TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.database import open_database
from a2a_wrapper.state.task_store import WriteBehindTaskStore

Result = TypeVar("Result")


@asynccontextmanager
async def listing_off_the_loop(store: WriteBehindTaskStore, database: Path) -> AsyncIterator[TaskStore]:
    """`store`, its `list` run on a thread of its own until the exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="task-listing", daemon=True)
    thread.start()
    engine: AsyncEngine | None = None
    try:
        engine = await _on(loop, _opened(database))
        yield _ListedOffTheLoop(store, DatabaseTaskStore(engine, create_table=False), loop)
    finally:
        if engine is not None:
            await _on(loop, engine.dispose())
        loop.call_soon_threadsafe(loop.stop)
        await asyncio.to_thread(thread.join)
        loop.close()


async def _opened(database: Path) -> AsyncEngine:
    return open_database(database)  # made on the listing loop, whose connections it then keeps


async def _on(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, Result]) -> Result:
    """`work`, run on `loop`; cancelling the caller cancels it there."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, loop))


class _ListedOffTheLoop(TaskStore):
    def __init__(self, store: WriteBehindTaskStore, lister: DatabaseTaskStore, loop: asyncio.AbstractEventLoop) -> None:
        self._store = store
        self._lister = lister
        self._loop = loop

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await self._store.save(task, context)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        return await self._store.get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        await self._store.flush()
        return await _on(self._loop, self._lister.list(params, context))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await self._store.delete(task_id, context)
