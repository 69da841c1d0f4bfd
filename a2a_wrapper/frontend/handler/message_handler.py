"""The agent's A2A request handler: a2a-sdk's, with what this agent adds to SendMessage and SendStreamingMessage.

Every binding (JSON-RPC, REST, gRPC; 1.0 and 0.3) calls this one object, so each gets the same behaviour:

- a message past the limits (frontend/handler/message_limits.py), or holding a number JSON has not
  (frontend/handler/message_numbers.py), is refused before anything runs or is stored;
- so is a message that registers a webhook inline (`configuration.taskPushNotificationConfig`) while push is off:
  the SDK would run it and drop the webhook unsaid; here it gets PushNotificationNotSupported (JSON-RPC -32003,
  REST 400), as the push config methods do;
- a message whose messageId the same caller already sent in the same context (state/message_ledger.py) is
  answered with the task it created (frontend/handler/retries.py): the turn and its tool calls do not run again. A retry
  that races its first attempt waits until that attempt's task holds the message (frontend/handler/attempts.py), so no
  two attempts of one message run, whichever arrives first. A webhook the retry registers inline is checked and kept
  for that task as CreateTaskPushNotificationConfig would (a bad one refused with its sentence). A message naming
  another task than the one its messageId made is not a retry but a mistake: InvalidParams, nothing run.

Every other method is a2a-sdk's own (frontend/handler/delegating_handler.py).
"""

import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import RequestHandler
from a2a.types import Message, SendMessageRequest, Task, TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError, PushNotificationNotSupportedError, TaskNotFoundError

from a2a_wrapper.frontend.auth import caller_of
from a2a_wrapper.frontend.handler.attempts import CLAIMED_TASK, Attempt, Attempts
from a2a_wrapper.frontend.handler.delegating_handler import DelegatingHandler
from a2a_wrapper.frontend.handler.message_limits import MessageLimits
from a2a_wrapper.frontend.handler.message_numbers import check_numbers
from a2a_wrapper.frontend.handler.retries import current_task, repeated_send, repeated_stream
from a2a_wrapper.state.message_ledger import MessageKey, MessageLedger

OTHER_TASK = (
    "messageId {id!r} was sent before and made task {earlier}, but this message names task {named}: a message sent "
    "again names the task it made (or none), and a new message needs a new messageId. Nothing was run."
)


class MessageHandler(DelegatingHandler):
    def __init__(
        self,
        sdk: RequestHandler,
        attempts: Attempts,
        ledger: MessageLedger | None,
        limits: MessageLimits,
        pushes: bool = True,
    ) -> None:
        """`sdk` (a2a-sdk's handler, or one wrapping it) must write its tasks through `attempts.watching(…)` and
        build its request contexts with `ClaimedTaskIds` (see `frontend.app.request_handler`). Without a
        ledger (a test of turns alone) a message sent again runs again. `pushes` is whether the SDK handler
        keeps webhooks (push is on)."""
        super().__init__(sdk)
        self._attempts = attempts
        self._ledger = ledger
        self._limits = limits
        self._pushes = pushes

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        self._check(params)
        admission = await self._admit(params, context)
        if isinstance(admission, Task):
            await self._keep_webhook(admission, params, context)
            return await repeated_send(self._inner, admission, params, context)
        async with self._first(admission, context):
            return await self._inner.on_message_send(params, context)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        self._check(params)
        admission = await self._admit(params, context)
        if isinstance(admission, Task):
            await self._keep_webhook(admission, params, context)
        events = (
            repeated_stream(self._inner, admission, params, context)
            if isinstance(admission, Task)
            else self._inner.on_message_send_stream(params, context)
        )
        async with self._first(admission, context), aclosing(events) as stream:  # type: ignore[type-var]
            async for event in stream:
                yield event

    def _check(self, params: SendMessageRequest) -> None:
        self._limits.check(params.message)
        check_numbers(params.message)
        if not self._pushes and params.configuration.HasField("task_push_notification_config"):
            raise PushNotificationNotSupportedError(
                message="Push notifications are off on this agent (push.enabled: false): send the message without "
                "configuration.taskPushNotificationConfig. Nothing was run."
            )

    async def _admit(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Attempt | None:
        """The task an earlier attempt of this message created, or this first attempt (its claim recorded), or
        None when there is nothing to key on (no ledger, or no messageId: a2a-sdk refuses that message)."""
        message = params.message
        if self._ledger is None or not message.message_id:
            return None
        key = MessageKey(caller_of(context), message.context_id, message.message_id)
        while True:
            running = self._attempts.running(key)
            if running is not None:
                await running.settled.wait()
                continue
            attempt = self._attempts.begin(key, message.task_id or str(uuid.uuid4()))
            try:
                earlier = await self._ledger.claim(key, attempt.task_id)
            except BaseException:
                self._attempts.end(attempt)
                raise
            if earlier is None:
                return attempt
            self._attempts.end(attempt)
            if message.task_id and message.task_id != earlier:
                raise InvalidParamsError(
                    message=OTHER_TASK.format(id=message.message_id, earlier=earlier, named=message.task_id)
                )
            try:
                return await current_task(self._inner, earlier, params, context)
            except TaskNotFoundError:  # gone since: the message is new again
                await self._ledger.forget(key, earlier)

    async def _keep_webhook(self, task: Task, params: SendMessageRequest, context: ServerCallContext) -> None:
        """The webhook a retry carries, checked and stored for the first attempt's task by the SDK's own method."""
        if not params.configuration.HasField("task_push_notification_config"):
            return
        config = TaskPushNotificationConfig()
        config.CopyFrom(params.configuration.task_push_notification_config)
        config.task_id = task.id
        await self._inner.on_create_task_push_notification_config(config, context)

    @asynccontextmanager
    async def _first(self, attempt: Attempt | Task | None, context: ServerCallContext) -> AsyncIterator[None]:
        """Runs a first attempt; if its task never held the message, the claim is withdrawn (a retry runs)."""
        if not isinstance(attempt, Attempt) or self._ledger is None:
            yield
            return
        context.state[CLAIMED_TASK] = attempt.task_id
        try:
            yield
        finally:
            try:
                if not attempt.accepted:
                    await self._ledger.forget(attempt.key, attempt.task_id)
            finally:
                self._attempts.end(attempt)
