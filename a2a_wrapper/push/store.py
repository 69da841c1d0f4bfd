"""The webhooks callers register, kept with their tasks in the agent's database.

a2a-sdk's database store (its own table, `push_notification_configs`), scoped to the caller that registered each
config: another caller neither sees nor deletes it (and cannot reach the task in the first place). Its writes
queue with the agent's others (state/database.py). A task's configs are dropped once its end has been pushed:
the spec keeps a config until its task ends.

Which tasks have configs at all is also kept in memory (loaded at start, kept by every write here; one process
owns the file, state/lock.py): a push for a task without a webhook, nearly every task, then reads nothing.
"""

from collections.abc import Collection
from functools import partial

from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabasePushNotificationConfigStore
from a2a.types import TaskPushNotificationConfig
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.database import writing, written
from a2a_wrapper.state.engines import is_shared


class PushConfigs(DatabasePushNotificationConfigStore):
    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine)
        self._tasks: set[str] = set()  # the ids of the tasks that have configs
        self._shared = is_shared(engine)  # replicas register configs too: this one's memory is not the table

    async def initialize(self) -> None:
        await written(self.engine, super().initialize)
        async with self.engine.connect() as db:
            self._tasks = set((await db.scalars(select(self.config_model.task_id).distinct())).all())

    def registered(self, task_id: str) -> bool:
        """Whether the task has a config, without a query (on shared state: whether it may have one)."""
        return self._shared or task_id in self._tasks

    async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
        if not self.registered(task_id):
            return []
        return await super().get_info_for_dispatch(task_id)

    async def set_info(
        self, task_id: str, notification_config: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        self._tasks.add(task_id)  # before the write: a push racing it reads the table rather than skip it
        return await written(self.engine, partial(super().set_info, task_id, notification_config, context))

    async def delete_info(self, task_id: str, context: ServerCallContext, config_id: str | None = None) -> None:
        await written(self.engine, partial(super().delete_info, task_id, context, config_id))
        await self._recount(task_id)

    async def forget(self, task_id: str, config_ids: Collection[str]) -> None:
        """The task's configs whose end has been pushed, deleted (whichever caller registered them)."""
        model = self.config_model
        async with writing(self.engine) as db:
            await db.execute(delete(model).where(model.task_id == task_id, model.config_id.in_(config_ids)))
        await self._recount(task_id)

    async def _recount(self, task_id: str) -> None:
        """After a delete: the task keeps its place in memory only while a config of it is left."""
        if not await super().get_info_for_dispatch(task_id):
            self._tasks.discard(task_id)
