"""One OpenCode 2 turn: the prompt posted (it returns at once), the session's events translated until its
execution ends, permission requests and questions (forms) answered over HTTP.

With the wrapper's tool hook installed, each tool call is held before it runs and becomes a `Permission` here too
(see opencode/hook.py); OpenCode's own request for a call the hook already allowed is answered with that decision.
"""

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from a2a_wrapper.backends.base import Batch, Prompt, Session
from a2a_wrapper.backends.kit.abort import wait_stopped
from a2a_wrapper.backends.kit.stream import batches
from a2a_wrapper.backends.opencode.event_stream import BACKEND_EXITED, RECONNECTED, EventQueue
from a2a_wrapper.backends.opencode.hook import HOOK_CALL, HOOK_PREFIX, HookGate
from a2a_wrapper.backends.opencode.turn import HOOK_MISSING
from a2a_wrapper.backends.opencode2.translate import Translator
from a2a_wrapper.errors import BackendError, NotFound, SessionGone
from a2a_wrapper.events import Done, Permission, StreamEvent, Text

if TYPE_CHECKING:
    from a2a_wrapper.backends.opencode2.backend import OpenCode2Backend

log = logging.getLogger(__name__)

STOPPED = (
    "The OpenCode backend stopped during the turn (exit code {code}); it is being restarted. Send the message again."
)
LOST = "The OpenCode event stream was lost while the turn ran; its answer may be incomplete."
FILES_REFUSED = "The OpenCode 2 backend does not take files with a message yet; nothing was sent. Send the text alone."
_ENDED = ("session.execution.succeeded", "session.execution.failed", "session.execution.interrupted")


class OpenCode2Turn:
    """One prompt and its events until the session's execution ends."""

    def __init__(self, backend: "OpenCode2Backend", session: Session, prompt: Prompt) -> None:
        self._backend = backend
        self._session = session
        self._prompt = prompt
        self._gate: HookGate | None = None  # this turn's tool calls, held by the hook until decided
        self._requests: dict[str, str] = {}  # permission or form id -> the session (a subagent's) that asked
        self._fields: dict[str, str] = {}  # form id -> the key of the field an answer fills
        self._events = backend.events

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._run()

    async def _run(self) -> AsyncIterator[Batch]:
        events = self._events
        subscription = events.subscribe(self._session.id)
        hooks = self._backend.hooks
        try:
            async with asyncio.timeout(10):
                await events.connected.wait()
            if self._prompt.files:
                yield (Done(outcome="failed", sentence=FILES_REFUSED),)
                return
            if not await self._backend.hook_ready(10):  # a restarted OpenCode that did not load it: run nothing
                yield (Done(outcome="failed", sentence=HOOK_MISSING),)
                return
            if hooks is not None:
                self._gate = HookGate(subscription.queue)
                hooks.open(self._session.id, self._gate)
            try:
                await self._backend.request(
                    "POST", f"/api/session/{self._session.id}/prompt", prompt_body(self._prompt)
                )
            except NotFound as exc:
                raise SessionGone(str(exc)) from exc
            translate = partial(self._translate, Translator())
            async with aclosing(batches(subscription.queue, translate)) as stream:
                async for batch in stream:
                    # Once the answer streams, bursts may wait for each other: no more handing each event over alone.
                    subscription.eager = subscription.eager and not any(isinstance(event, Text) for event in batch)
                    yield batch
        except TimeoutError:
            yield (Done(outcome="failed", sentence="The OpenCode event stream is not connected."),)
        except SessionGone:
            raise  # nothing started: the caller opens a new session and tries again
        except BackendError as exc:
            yield (Done(outcome="failed", sentence=str(exc)),)
        finally:
            if hooks is not None and self._gate is not None:
                hooks.close(self._session.id, self._gate)
            events.unsubscribe(self._session.id, subscription)

    async def _translate(self, translator: Translator, event: dict[str, Any]) -> list[StreamEvent]:
        """One event of OpenCode's stream (or of the wrapper's own: the backend died, the stream reconnected, the
        hook holds a call) as StreamEvents."""
        if event["type"] == BACKEND_EXITED:
            return [Done(outcome="failed", sentence=STOPPED.format(code=event["properties"].get("code")))]
        if event["type"] == RECONNECTED:  # events may be lost: a turn that ended meanwhile ends, never hangs
            return [] if await self._busy() else [Done(outcome="failed", sentence=LOST)]
        if event["type"] == HOOK_CALL:
            return [translator.hook_call(event["properties"])]
        props = event["properties"]
        if event["type"] in ("permission.asked", "form.created"):
            request_id = props.get("id") or (props.get("form") or {}).get("id")
            self._requests[str(request_id)] = str(props.get("sessionID") or self._session.id)
            fields = (props.get("form") or {}).get("fields") or [{}]
            self._fields[str(request_id)] = str(fields[0].get("key") or "q0")
        return await self._undecided(translator.feed(event))

    async def _undecided(self, events: list[StreamEvent]) -> list[StreamEvent]:
        """OpenCode's own request for a call the hook already allowed is answered with that decision at once:
        one decision, one audit row per call."""
        kept: list[StreamEvent] = []
        for event in events:
            if isinstance(event, Permission) and self._gate is not None and self._gate.decided(event, *_call_of(event)):
                log.debug("session %s: %s (%s) was decided at the hook", self._session.id, event.id, event.tool)
                await self._reply(event.id, {"decision": "once"})
            else:
                kept.append(event)
        return kept

    async def _busy(self) -> bool:
        active = await self._backend.request("GET", "/api/session/active")
        return self._session.id in ((active or {}).get("data") or {})

    def _asker(self, request_id: str) -> str:
        return self._requests.get(request_id, self._session.id)

    async def _reply(self, permission_id: str, body: dict[str, Any]) -> None:
        path = f"/api/session/{self._asker(permission_id)}/permission/{permission_id}/reply"
        await self._backend.request("POST", path, body)

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        if permission_id.startswith(HOOK_PREFIX):  # a call the hook holds: the plugin gets the answer
            if self._gate is not None:
                self._gate.settle(permission_id, decision == "allow", reason)
            return
        # 2.x carries the sentence to the model with the refusal.
        await self._reply(
            permission_id, {"decision": "once"} if decision == "allow" else {"decision": "reject", "message": reason}
        )

    async def answer(self, question_id: str, text: str | None) -> None:
        path = f"/api/session/{self._asker(question_id)}/form/{question_id}"
        if text is None:
            await self._backend.request("DELETE", path)
        else:
            await self._backend.request(
                "POST", f"{path}/reply", {"answer": {self._fields.get(question_id, "q0"): text}}
            )

    async def abort(self) -> None:
        """Interrupt the running turn and wait (bounded) until OpenCode says its execution ended."""
        events = self._events
        subscription = events.subscribe(self._session.id)
        subscription.eager = False
        try:
            await self._backend.request("POST", f"/api/session/{self._session.id}/interrupt", {})
            if not await self._busy():
                return
            await wait_stopped(_ended(subscription.queue), self._session.id)
        finally:
            events.unsubscribe(self._session.id, subscription)


def _call_of(request: Permission) -> tuple[object, object]:
    """(session, call id) of the tool call a 2.x permission request is about."""
    return request.raw.get("sessionID"), (request.raw.get("source") or {}).get("id")


async def _ended(queue: EventQueue) -> None:
    """Until the session's events say its execution ended (or its OpenCode died)."""
    while (await queue.get())["type"] not in (*_ENDED, BACKEND_EXITED):
        pass


def prompt_body(prompt: Prompt) -> dict[str, Any]:
    """The body of `prompt`: its text (a prompt with files is refused before it is sent: FILES_REFUSED)."""
    return {"text": prompt.text}
