"""One Claude Code turn: the ACP turn, plus the calls its PreToolUse hook holds, as Permissions on the same stream.

The hook's gate is open for the turn's session from before the prompt is sent until its answer: a call that
arrives outside it is blocked (HookServer: no turn is running).
"""

from typing import TYPE_CHECKING, Any, Literal, cast

from a2a_wrapper.backends.acp.client import Channel
from a2a_wrapper.backends.acp.turn import AcpTurn, Block
from a2a_wrapper.backends.base import Prompt, Session
from a2a_wrapper.backends.claude.tools import hook_permission
from a2a_wrapper.backends.opencode.hook import HOOK_CALL, HOOK_PREFIX, HookGate
from a2a_wrapper.events import StreamEvent
from a2a_wrapper.loop_queue import LoopQueue

if TYPE_CHECKING:
    from a2a_wrapper.backends.claude.backend import ClaudeBackend


class ClaudeTurn(AcpTurn):
    def __init__(self, backend: "ClaudeBackend", session: Session, prompt: Prompt) -> None:
        super().__init__(backend, session, prompt)
        self._claude = backend
        self._gate: HookGate | None = None

    def _start(self, blocks: list[Block]) -> Channel:
        channel = super()._start(blocks)  # the prompt is sent once this returns to the loop: the gate is open first
        hooks, session_id = self._claude.hooks, self._session.id
        gate = HookGate(cast(LoopQueue[dict[str, Any]], channel.queue))
        hooks.open(session_id, gate)
        assert self._request is not None
        self._request.add_done_callback(lambda _: hooks.close(session_id, gate))
        self._gate = gate
        return channel

    async def _translate(self, item: StreamEvent | object) -> list[StreamEvent]:
        if isinstance(item, dict) and item.get("type") == HOOK_CALL:
            return [hook_permission(item["properties"])]
        return await super()._translate(item)

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        if permission_id.startswith(HOOK_PREFIX):
            if self._gate is not None:
                self._gate.settle(permission_id, decision == "allow", reason)
            return
        await super().reply(permission_id, decision, reason)
