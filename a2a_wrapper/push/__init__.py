"""Push notifications (A2A §13): webhooks a caller registers per task, told of each change of its state.

`store` keeps the configs with the tasks, `urls` decides where a webhook may point, `delivery` sends behind the
turn. `push_service` sets the three up as one, for the agent's lifetime.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.config.settings import PushSettings
from a2a_wrapper.push.delivery import PushDelivery
from a2a_wrapper.push.store import PushConfigs
from a2a_wrapper.push.urls import WebhookPolicy


@dataclass(frozen=True)
class Push:
    """What the request handler takes: the configs, the sender, and the check of a URL a caller registers."""

    configs: PushConfigs
    delivery: PushDelivery
    policy: WebhookPolicy


@asynccontextmanager
async def push_service(settings: PushSettings, engine: AsyncEngine) -> AsyncIterator[Push | None]:
    """Push ready to take configs and send, or None when `push.enabled` is off; on exit the owed pushes get
    `push.timeout` to go out."""
    if not settings.enabled:
        yield None
        return
    configs = PushConfigs(engine)
    await configs.initialize()
    policy = WebhookPolicy(settings.allow_hosts)
    delivery = PushDelivery(configs, policy, settings)
    await delivery.start()
    try:
        yield Push(configs, delivery, policy)
    finally:
        await delivery.stop()
