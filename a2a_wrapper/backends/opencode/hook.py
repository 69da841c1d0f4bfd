"""The wrapper's end of OpenCode's tool hook (plugin/a2a-wrapper-hook.js): every tool call, before it runs.

OpenCode asks permission only when its own parse of a call says so (`>README.md` asks nothing), so its permission
requests alone do not see every call. The plugin's `tool.execute.before` hook does, for every tool (checked on
1.18.33: the built-in tools, MCP tools and a `task` subagent's calls). It posts each call to a Unix socket in the
backend's own folder (a sandboxed OpenCode has no network; that folder is bound at the same path inside) and waits:
the call becomes a `Permission` on the running turn's stream, decided, asked and audited as any other, and the
answer goes back through the turn's `reply`. Anything but an allow blocks the call, and so does a call no running
turn owns. A later permission request of an allowed call is answered with that decision (see `HookGate.decided`).

The socket's folder is read-only inside a sandbox, so nothing there can take the socket's place; and only
OpenCode's own process is heard on it (`is_backend`, by the kernel's word on who connected: kit/peers.py): a tool
that connects to it, to forge a call in some session's name or a hello, is refused without a decision or an audit
row in anyone's name.
"""

import asyncio
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from a2a_wrapper.backends.kit.peers import peer_pid
from a2a_wrapper.backends.kit.pending import PendingReplies
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.events import Permission
from a2a_wrapper.loop_queue import LoopQueue

log = logging.getLogger(__name__)

HOOK_CALL = "a2a-wrapper.hook-call"  # the synthetic event a held call is on a turn's queue as
HOOK_PREFIX = "hook_"  # permission ids of held calls: the turn answers them itself, not OpenCode
NO_TURN = "No turn of this agent is running in this session, so nothing may run in it."
TURN_OVER = "The turn this call belonged to is over; the call did not run."
_BROKEN = "The wrapper could not check this tool call, so it did not run. Do not retry it."
NOT_THE_BACKEND = "Only the backend's own process is heard on the tool hook; this connection is not it."
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL
_MAX_CALL = 64 * 1024 * 1024  # a write's arguments carry the whole file
_MAX_NESTING = 8  # subagents of subagents: more is a loop in the parents we were told

ParentOf = Callable[[str], Awaitable[str | None]]
IsBackend = Callable[[int], bool]  # whether a process id is the backend's own process (None: not checked)


class HookGate:
    """A running turn's side of the hook: each held call goes on the turn's queue and waits for `settle`."""

    def __init__(self, queue: LoopQueue[dict[str, Any]]) -> None:
        self._queue = queue
        self._replies: PendingReplies[tuple[bool, str]] = PendingReplies()
        self._calls: dict[str, tuple[str, str]] = {}  # permission id -> (session, call id) while it waits
        self._allowed: set[tuple[str, str]] = set()  # (session, call id) the hook allowed
        self._closed = False

    async def check(self, call: dict[str, Any]) -> tuple[bool, str]:
        """(allowed, sentence) for one call the plugin holds; waits as long as the decision takes."""
        if self._closed:
            return False, TURN_OVER
        permission_id = HOOK_PREFIX + uuid.uuid4().hex
        self._calls[permission_id] = (str(call.get("sessionID")), str(call.get("callID")))
        held = {"type": HOOK_CALL, "properties": {**call, "id": permission_id}}
        try:
            return await self._replies.wait(permission_id, lambda: self._queue.put_nowait(held))
        finally:
            self._calls.pop(permission_id, None)

    def settle(self, permission_id: str, allow: bool, reason: str) -> None:
        key = self._calls.get(permission_id)
        if self._replies.settle(permission_id, (allow, reason)) and allow and key is not None:
            self._allowed.add(key)

    def decided(self, request: Permission, session_id: object, call_id: object) -> bool:
        """Whether OpenCode asks this for a call (of `session_id`, by `call_id`) the hook already allowed: the
        decision covered the whole call (its command, paths and workdir), so it is answered with it, not decided
        and audited again. OpenCode's `doom_loop` asks about the loop, not the call, and is decided on its own."""
        return request.tool != "doom_loop" and (str(session_id), str(call_id)) in self._allowed

    def close(self) -> None:
        """The turn is over: calls still held are blocked, later ones too."""
        self._closed = True
        self._replies.settle_all(lambda _: (False, TURN_OVER))


class HookServer:
    """Serves the plugin on `<backend folder>/hook.sock`, routing each call to the gate of the turn it belongs to."""

    def __init__(self, name: str, path: Path, parent_of: ParentOf, is_backend: IsBackend | None = None) -> None:
        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            raise ConfigError(
                f"The tool hook's socket path {path} is longer than a Unix socket allows ({MAX_SOCKET_PATH} bytes); "
                "set a shorter state_dir."
            )
        self._name = name
        self.path = path
        self._parent_of = parent_of
        self._is_backend = is_backend
        self._gates: dict[str, HookGate] = {}  # by the session of the turn
        self._runner: web.AppRunner | None = None
        self.loaded = asyncio.Event()  # the plugin said hello since OpenCode last started

    async def start(self) -> None:
        app = web.Application(client_max_size=_MAX_CALL)
        app.router.add_post("/hello", self._hello)
        app.router.add_post("/tool", self._tool)
        # A call whose connection closed (OpenCode aborted or died) stops waiting at once.
        runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await runner.setup()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)  # left by a wrapper that died
        try:
            await web.UnixSite(runner, str(self.path)).start()
        except BaseException:
            await runner.cleanup()
            raise
        self.path.chmod(0o600)
        self._runner = runner

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.path.unlink(missing_ok=True)

    def open(self, session_id: str, gate: HookGate) -> None:
        self._gates[session_id] = gate

    def close(self, session_id: str, gate: HookGate) -> None:
        gate.close()
        if self._gates.get(session_id) is gate:
            del self._gates[session_id]

    def _from_backend(self, request: web.Request) -> bool:
        if self._is_backend is None:
            return True
        connection = request.transport.get_extra_info("socket") if request.transport is not None else None
        pid = peer_pid(connection) if connection is not None else 0
        if self._is_backend(pid):
            return True
        log.warning("[%s] tool hook: refused a request from pid %s, which is not OpenCode's process", self._name, pid)
        return False

    async def _hello(self, request: web.Request) -> web.Response:
        if not self._from_backend(request):
            return web.json_response({"error": NOT_THE_BACKEND}, status=403)
        body = await request.json()
        log.info("[%s] OpenCode loaded the tool hook for %s", self._name, body.get("directory"))
        self.loaded.set()
        return web.json_response({})

    async def _tool(self, request: web.Request) -> web.Response:
        if not self._from_backend(request):
            return web.json_response({"decision": "deny", "reason": NOT_THE_BACKEND}, status=403)
        try:
            call = await request.json()
            gate = await self._gate_of(str(call.get("sessionID") or ""))
            allowed, reason = await gate.check(call) if gate is not None else (False, NO_TURN)
        except Exception:  # the boundary of one call: whatever breaks blocks it
            log.exception("[%s] checking a tool call from the backend failed; it is blocked", self._name)
            allowed, reason = False, _BROKEN
        return web.json_response({"decision": "allow" if allowed else "deny", "reason": reason})

    async def _gate_of(self, session_id: str) -> HookGate | None:
        """The gate of the turn this session's call belongs to: a subagent's session belongs to its parent's turn."""
        for _ in range(_MAX_NESTING):
            if session_id in self._gates:
                return self._gates[session_id]
            parent = await self._parent_of(session_id) if session_id else None
            if parent is None:
                return None
            session_id = parent
        return None
