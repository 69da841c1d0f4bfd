"""One OpenCode turn: the prompt posted to `prompt_async`, the session's events (routed to it by the event stream)
translated until the session is idle, and the permission requests and questions answered over HTTP.

With the wrapper's tool hook installed, each tool call is held before it runs and becomes a `Permission` here too
(see hook.py); OpenCode's own request for a call the hook already allowed is answered with that decision.
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
from a2a_wrapper.backends.opencode import launch
from a2a_wrapper.backends.opencode.event_stream import BACKEND_EXITED, RECONNECTED, EventQueue
from a2a_wrapper.backends.opencode.hook import HOOK_CALL, HOOK_PREFIX, HookGate
from a2a_wrapper.backends.opencode.translate import Translator
from a2a_wrapper.config.backends import OpenCodeSettings
from a2a_wrapper.errors import BackendError, NotFound, SessionGone
from a2a_wrapper.events import Done, Permission, StreamEvent, Text

if TYPE_CHECKING:
    from a2a_wrapper.backends.opencode.backend import OpenCodeBackend

log = logging.getLogger(__name__)

HOOK_MISSING = (
    "OpenCode did not load the wrapper's tool hook, so its tool calls could not be checked before they run; "
    "nothing was run. Check the agent's log for the plugin error."
)


class OpenCodeTurn:
    """One prompt and its events until the session is idle."""

    def __init__(self, backend: "OpenCodeBackend", session: Session, prompt: Prompt) -> None:
        self._backend = backend
        self._session = session
        self._prompt = prompt
        self._gate: HookGate | None = None  # this turn's tool calls, held by the hook until decided
        self._events = backend.events_for(session.directory)  # the stream of the session's directory

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._run()

    async def _run(self) -> AsyncIterator[Batch]:
        events = self._events
        subscription = events.subscribe(self._session.id)
        queue = subscription.queue
        translator = self._translator()
        hooks = self._backend.hooks
        try:
            async with asyncio.timeout(10):
                await events.connected.wait()
            if not await self._backend.hook_ready(10):  # a restarted OpenCode that did not load it: run nothing
                yield (Done(outcome="failed", sentence=HOOK_MISSING),)
                return
            if hooks is not None:
                self._gate = HookGate(queue)
                hooks.open(self._session.id, self._gate)
            try:
                await self._send()
            except NotFound as exc:
                raise SessionGone(str(exc)) from exc
            async with aclosing(batches(queue, partial(self._translate, translator))) as stream:
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

    def _translator(self) -> Any:
        """This turn's translator of OpenCode's events (each API has its own)."""
        return Translator(self._backend.mcp_servers)

    async def _send(self) -> None:
        body = prompt_body(self._backend.settings, self._prompt)
        await self._request("POST", f"/session/{self._session.id}/prompt_async", body)

    async def _translate(self, translator: Translator, event: dict[str, Any]) -> list[StreamEvent]:
        """One event of OpenCode's stream (or of the wrapper's own: the backend died, the stream reconnected, the
        hook holds a call) as StreamEvents."""
        if event["type"] == BACKEND_EXITED:
            code = event["properties"].get("code")
            sentence = f"The OpenCode backend stopped during the turn (exit code {code}); it is being restarted."
            return [Done(outcome="failed", sentence=sentence + " Send the message again.")]
        if event["type"] == RECONNECTED and translator.prompt_seen and not await self._busy():
            return translator.recover(await self._messages())
        if event["type"] == HOOK_CALL:
            return [translator.hook_call(event["properties"])]
        return await self._undecided(translator.feed(event))

    async def _undecided(self, events: list[StreamEvent]) -> list[StreamEvent]:
        """OpenCode's own request for a call the hook already allowed is answered with that decision at once:
        one decision, one audit row per call."""
        kept: list[StreamEvent] = []
        for event in events:
            if (
                isinstance(event, Permission)
                and self._gate is not None
                and self._gate.decided(event, *self._call_of(event))
            ):
                log.debug("session %s: %s (%s) was decided at the hook", self._session.id, event.id, event.tool)
                await self._allow(event.id)
            else:
                kept.append(event)
        return kept

    @staticmethod
    def _call_of(request: Permission) -> tuple[object, object]:
        """(session, call id) of the tool call a permission request is about."""
        return request.raw.get("sessionID"), (request.raw.get("tool") or {}).get("callID")

    async def _allow(self, permission_id: str) -> None:
        await self._request("POST", f"/permission/{permission_id}/reply", {"reply": "once"})

    async def _messages(self) -> list[dict[str, Any]]:
        return list(await self._request("GET", f"/session/{self._session.id}/message") or [])

    async def _busy(self) -> bool:
        statuses = await self._request("GET", "/session/status")
        return self._session.id in (statuses or {})

    async def _request(self, method: str, path: str, body: Any = None) -> Any:
        """A call about this session's OpenCode instance (its workspace's, or the workdir's)."""
        return await self._backend.request(method, path, body, directory=self._session.directory)

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        if permission_id.startswith(HOOK_PREFIX):  # a call the hook holds: the plugin gets the answer
            if self._gate is not None:
                self._gate.settle(permission_id, decision == "allow", reason)
            return
        body = {"reply": "once"} if decision == "allow" else {"reply": "reject", "message": reason}
        await self._request("POST", f"/permission/{permission_id}/reply", body)

    async def answer(self, question_id: str, text: str | None) -> None:
        if text is None:
            await self._request("POST", f"/question/{question_id}/reject", {})
        else:
            await self._request("POST", f"/question/{question_id}/reply", {"answers": [[text]]})

    async def _interrupt(self) -> None:
        await self._request("POST", f"/session/{self._session.id}/abort", {})

    @staticmethod
    async def _stopped(queue: EventQueue) -> None:
        """Until the session's events say it is idle (or its OpenCode died)."""
        while (await queue.get())["type"] not in ("session.idle", BACKEND_EXITED):
            pass

    async def abort(self) -> None:
        """Abort the running turn and wait (bounded) until OpenCode says the session is idle."""
        events = self._events
        subscription = events.subscribe(self._session.id)
        subscription.eager = False
        try:
            await self._interrupt()
            if not await self._busy():
                return
            await wait_stopped(self._stopped(subscription.queue), self._session.id)
        finally:
            events.unsubscribe(self._session.id, subscription)


def prompt_body(settings: OpenCodeSettings, prompt: Prompt) -> dict[str, Any]:
    """The body of `prompt_async`: the prompt's parts, the model, and the system prompt or agent."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": prompt.text}] if prompt.text else []
    for file in prompt.files:
        part = {"type": "file", "mime": file.media_type, "url": file.url}
        if file.filename:
            part["filename"] = file.filename
        parts.append(part)
    provider_id, _, model_id = settings.model.partition("/")
    body: dict[str, Any] = {"parts": parts, "model": {"providerID": provider_id, "modelID": model_id}}
    if settings.system_prompt_mode == "replace" and settings.system_prompt:
        body["agent"] = launch.REPLACE_AGENT
    else:
        if settings.system_prompt:
            body["system"] = settings.system_prompt
        if settings.agent:
            body["agent"] = settings.agent
    return body
