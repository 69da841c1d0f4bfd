"""Pushes a task's changes of state to the webhooks registered for it, behind the turn.

a2a-sdk calls the sender inline, for every event of every task, before the event reaches the caller's stream:
a slow receiver there would slow the turn. Here `send_notification` only picks the events worth a push (a
change of state: working, input-required, auth-required and the ends, never a text chunk) and queues them;
each task with pushes owed has a lane, a task that delivers them in order while the turn goes on. A delivery
is one POST per config: the event as a StreamResponse (`{"statusUpdate": …}` or `{"task": …}`), the config's
token as `X-A2A-Notification-Token`, its `authentication` as `Authorization: <scheme> <credentials>`. Timeouts,
refused connections, 408, 429 and 5xx are tried again with backoff, up to `push.attempts`; then a WARNING
names the task and the receiver's host (never the token). After a task's end is pushed its configs are dropped.
"""

import asyncio
import logging
import math
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a.server.tasks import PushNotificationSender
from a2a.server.tasks.push_notification_sender import PushNotificationEvent
from a2a.types import Task, TaskPushNotificationConfig, TaskState, TaskStatusUpdateEvent
from a2a.utils.proto_utils import to_stream_response
from google.protobuf.json_format import MessageToDict

from a2a_wrapper.background import cancel_and_wait
from a2a_wrapper.backoff import Backoff, CrashHistory
from a2a_wrapper.config.settings import PushSettings
from a2a_wrapper.push.store import PushConfigs
from a2a_wrapper.push.urls import Unresolvable, WebhookPolicy, WebhookRefused

log = logging.getLogger(__name__)

TOKEN_HEADER = "X-A2A-Notification-Token"
RETRY = Backoff(backoff=0.5, max_backoff=30.0, window=math.inf)  # 0.5 s, 1 s, 2 s … between attempts
ENDS = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}
MAX_OWED = 64  # pushes one task may have waiting; a receiver this far behind loses the oldest


@dataclass(frozen=True, slots=True)
class _Failure:
    reason: str
    retry: bool


class PushDelivery(PushNotificationSender):
    """The agent's push sender; `start` and `stop` bracket the requests that may push (agent.py)."""

    def __init__(self, configs: PushConfigs, policy: WebhookPolicy, settings: PushSettings) -> None:
        self._configs = configs
        self._policy = policy
        self._settings = settings
        self._client: httpx.AsyncClient | None = None
        self._pushed: dict[str, TaskState] = {}  # each task's state last queued for a push
        self._owed: dict[str, deque[PushNotificationEvent]] = {}
        self._lanes: dict[str, asyncio.Task[None]] = {}

    async def start(self) -> None:
        # No redirects (one could lead past the address check) and no proxy from the environment.
        self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=self._settings.timeout)

    async def stop(self) -> None:
        """Stops taking pushes, gives the owed ones `push.timeout` to go out, then cancels the rest."""
        client, self._client = self._client, None
        lanes = list(self._lanes.values())
        if lanes:
            _, late = await asyncio.wait(lanes, timeout=self._settings.timeout)
            if late:
                log.warning("stopping with pushes owed for %d task(s); they are not sent", len(late))
            for lane in late:
                await cancel_and_wait(lane)
        if client is not None:
            await client.aclose()

    async def send_notification(self, task_id: str, event: PushNotificationEvent) -> None:
        """Queues the event when it changes the task's state; returns at once."""
        state = _state(event)
        if self._client is None or state is None or self._pushed.get(task_id) == state:
            return
        if not self._configs.registered(task_id):  # no webhook for this task (nearly every task): nothing owed
            self._pushed.pop(task_id, None)
            return
        if state == TaskState.TASK_STATE_SUBMITTED:  # the caller's own request just returned it
            self._pushed[task_id] = state
            return
        if state in ENDS:
            self._pushed.pop(task_id, None)
        else:
            self._pushed[task_id] = state
        copy = type(event)()
        copy.CopyFrom(event)
        owed = self._owed.setdefault(task_id, deque(maxlen=MAX_OWED))
        owed.append(copy)
        if task_id not in self._lanes:
            self._lanes[task_id] = asyncio.create_task(self._drain(task_id, owed), name=f"push-{task_id}")

    async def _drain(self, task_id: str, owed: deque[PushNotificationEvent]) -> None:
        try:
            while owed:
                event = owed.popleft()
                try:
                    await self._push(task_id, event)
                except Exception:  # one event's failure must not stop the task's later pushes
                    log.exception("push for task %s failed", task_id)
        finally:
            del self._owed[task_id], self._lanes[task_id]

    async def _push(self, task_id: str, event: PushNotificationEvent) -> None:
        configs = await self._configs.get_info_for_dispatch(task_id)
        body = MessageToDict(to_stream_response(event))
        await asyncio.gather(*(self._deliver(task_id, config, body) for config in configs))
        if _state(event) in ENDS and configs:
            await self._configs.forget(task_id, [config.id for config in configs])

    async def _deliver(self, task_id: str, config: TaskPushNotificationConfig, body: dict[str, Any]) -> None:
        history = CrashHistory(RETRY)
        attempt = 1
        while (failure := await self._post(config, body)) is not None:
            if not failure.retry or attempt == self._settings.attempts:
                break
            await asyncio.sleep(history.delay(asyncio.get_running_loop().time()))
            attempt += 1
        if failure is None:
            log.debug("pushed %s to %s for task %s", _what(body), _host(config), task_id)
            return
        log.warning(
            "push for task %s to %s not delivered after %d attempt(s): %s",
            task_id,
            _host(config),
            attempt,
            failure.reason,
        )

    async def _post(self, config: TaskPushNotificationConfig, body: dict[str, Any]) -> _Failure | None:
        client = self._client
        if client is None:
            return _Failure("the agent is stopping", retry=False)
        try:
            async with asyncio.timeout(self._settings.timeout):
                destination = await self._policy.destination(config.url)
                response = await client.post(
                    destination.url,
                    json=body,
                    headers={"Host": destination.authority, **_credentials(config)},
                    extensions={"sni_hostname": destination.host},
                )
        except Unresolvable as exc:
            return _Failure(str(exc), retry=True)
        except WebhookRefused as exc:
            return _Failure(str(exc), retry=False)
        except TimeoutError:
            return _Failure(f"no answer within {self._settings.timeout:g} s", retry=True)
        except httpx.HTTPError as exc:
            return _Failure(f"{type(exc).__name__}: {exc}", retry=True)
        if response.is_success:
            return None
        code = response.status_code
        return _Failure(f"the receiver answered HTTP {code}", retry=code in (408, 429) or code >= 500)


def _state(event: PushNotificationEvent) -> TaskState | None:
    if isinstance(event, TaskStatusUpdateEvent | Task):
        return event.status.state
    return None  # an artifact update: text and files, not a change of state


def _credentials(config: TaskPushNotificationConfig) -> dict[str, str]:
    headers = {}
    if config.token:
        headers[TOKEN_HEADER] = config.token
    if config.HasField("authentication") and config.authentication.scheme:
        headers["Authorization"] = f"{config.authentication.scheme} {config.authentication.credentials}".rstrip()
    return headers


def _host(config: TaskPushNotificationConfig) -> str:
    try:
        return urlsplit(config.url).hostname or "an unnamed host"
    except ValueError:
        return "an unparsable URL"


def _what(body: dict[str, Any]) -> str:
    return next(iter(body), "an event")
