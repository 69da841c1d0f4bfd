"""The webhooks callers register, kept with their tasks in the agent's database.

a2a-sdk's database store (its own table, `push_notification_configs`), scoped to the caller that registered each
config: another caller neither sees nor deletes it (and cannot reach the task in the first place). Its writes
queue with the agent's others (state/database.py). A task's configs are dropped once its end has been pushed:
the spec keeps a config until its task ends.
"""

from collections.abc import Collection
from functools import partial

from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabasePushNotificationConfigStore
from a2a.types import TaskPushNotificationConfig
from sqlalchemy import delete

from a2a_wrapper.state.database import writing, written


class PushConfigs(DatabasePushNotificationConfigStore):
    async def initialize(self) -> None:
        await written(self.engine, super().initialize)

    async def set_info(
        self, task_id: str, notification_config: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        return await written(self.engine, partial(super().set_info, task_id, notification_config, context))

    async def delete_info(self, task_id: str, context: ServerCallContext, config_id: str | None = None) -> None:
        await written(self.engine, partial(super().delete_info, task_id, context, config_id))

    async def forget(self, task_id: str, config_ids: Collection[str]) -> None:
        """The task's configs whose end has been pushed, deleted (whichever caller registered them)."""
        model = self.config_model
        async with writing(self.engine) as db:
            await db.execute(delete(model).where(model.task_id == task_id, model.config_id.in_(config_ids)))
