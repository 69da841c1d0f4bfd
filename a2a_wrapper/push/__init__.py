"""Push notifications (A2A §13): webhooks a caller registers per task, told of each change of its state.

`store` keeps the configs with the tasks, `urls` decides where a webhook may point, `delivery` sends behind the
turn, `owed` sends at start the ends a previous run did not. `push_service` sets them up as one, for the agent's
lifetime.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from a2a.server.tasks import TaskStore
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.config.settings import PushSettings
from a2a_wrapper.push.delivery import PushDelivery
from a2a_wrapper.push.owed import push_owed_ends
from a2a_wrapper.push.store import PushConfigs
from a2a_wrapper.push.urls import WebhookPolicy


@dataclass(frozen=True)
class Push:
    """What the request handler takes: the configs, the sender, and the check of a URL a caller registers."""

    configs: PushConfigs
    delivery: PushDelivery
    policy: WebhookPolicy


@asynccontextmanager
async def push_service(settings: PushSettings, engine: AsyncEngine, tasks: TaskStore) -> AsyncIterator[Push | None]:
    """Push ready to take configs and send, or None when `push.enabled` is off; the ends a previous run owed go
    out first (`tasks` holds them, recovered). On exit the owed pushes get `push.timeout` to go out."""
    if not settings.enabled:
        yield None
        return
    configs = PushConfigs(engine)
    await configs.initialize()
    policy = WebhookPolicy(settings.allow_hosts)
    delivery = PushDelivery(configs, policy, settings)
    await delivery.start()
    try:
        await push_owed_ends(engine, tasks, delivery)
        yield Push(configs, delivery, policy)
    finally:
        await delivery.stop()
