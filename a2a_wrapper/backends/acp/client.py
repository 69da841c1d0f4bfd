"""The wrapper's side of ACP: the callbacks an agent calls, routed to the turn running in that session.

The client declares no `fs` and no `terminal` capability and implements none of their methods, so every
`fs/*` and `terminal/*` request is answered "method not found". The agents run their own tools and ask
first through `session/request_permission`, which the shield already decides; offering fs/terminal would
route every read, write and command through us as well, and each would need the shield's decision and a
workspace check of its own.

A permission request becomes a `Permission` event of the running turn; the callback then waits for the
executor's `turn.reply`. A request with no turn to ask (none running in its session) is refused.
"""

import itertools
import logging
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from a2a_wrapper.backends.acp.translate import ToolCache, Verdict, chosen_option, permission, translate, usage_cost
from a2a_wrapper.backends.kit.pending import PendingReplies
from a2a_wrapper.backends.kit.router import SessionRouter
from a2a_wrapper.backends.kit.stream import PacedQueue
from a2a_wrapper.events import StreamEvent

log = logging.getLogger(__name__)

PROMPT_ENDED = object()  # put on a channel's queue when the prompt request has its answer


@dataclass(eq=False)
class Channel:
    """What one running turn receives: events in order, and the permission requests waiting on it."""

    queue: PacedQueue[StreamEvent | object] = field(default_factory=PacedQueue)
    tools: ToolCache = field(default_factory=ToolCache)
    waiting: PendingReplies[Verdict] = field(default_factory=PendingReplies)
    cost: float = 0.0

    def cancel_waiting(self) -> None:
        self.waiting.settle_all(lambda _: "cancelled")


class WrapperClient:
    """Implements acp's Client protocol for one agent connection."""

    def __init__(self, name: str, mcp_servers: tuple[str, ...] = ()) -> None:
        self._name = name
        self._mcp_servers = mcp_servers
        self._channels: SessionRouter[Channel] = SessionRouter()
        self._ids = itertools.count(1)

    def open(self, session_id: str) -> Channel:
        channel = Channel(tools=ToolCache(self._mcp_servers))
        self._channels.open(session_id, channel)
        return channel

    def close(self, session_id: str, channel: Channel) -> None:
        channel.cancel_waiting()
        self._channels.close(session_id, channel)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        channel = self._channels.get(session_id)
        if channel is None:
            return  # no turn running: a replay of history on session/load, or a late update
        cost = usage_cost(update)
        if cost is not None:
            channel.cost = cost
        for event in translate(update, channel.tools):
            channel.queue.put_nowait(event)

    def deliver(self, session_id: str, event: StreamEvent) -> bool:
        """A text chunk read past the acp library (reader.py), queued as `session_update` would; True when the
        turn's queue was empty, so the turn may be waiting for it."""
        channel = self._channels.get(session_id)
        if channel is None:
            return False
        waiting = channel.queue.empty()
        channel.queue.put_nowait(event)
        return waiting

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        channel = self._channels.get(session_id)
        if channel is None:
            log.warning("[%s] permission request in session %s with no turn running: refused", self._name, session_id)
            return _response(options, "deny")
        permission_id = f"acp-{next(self._ids)}"
        asked = permission(permission_id, channel.tools.merged(tool_call), options)
        verdict = await channel.waiting.wait(permission_id, lambda: channel.queue.put_nowait(asked))
        return _response(options, verdict)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.debug("[%s] ignored extension notification %s", self._name, method)


def _response(options: list[PermissionOption], verdict: Verdict) -> RequestPermissionResponse:
    option_id = chosen_option(options, verdict) if verdict != "cancelled" else None
    if option_id is None:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))
