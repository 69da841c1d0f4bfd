"""The OpenCode backend: `opencode serve` spawned (or attached to), driven over HTTP and one SSE stream."""

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any, Literal

import aiohttp

from a2a_wrapper.backends.base import Batch, Prompt, Session
from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.backends.kit.stream import batches
from a2a_wrapper.backends.opencode import launch
from a2a_wrapper.backends.opencode.event_stream import RECONNECTED, EventStream
from a2a_wrapper.backends.opencode.hook import HOOK_CALL, HOOK_PREFIX, HookGate, HookServer
from a2a_wrapper.backends.opencode.translate import Translator
from a2a_wrapper.background import cancel_and_wait
from a2a_wrapper.config.backends import OpenCodeSettings
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import BackendError, BackendUnavailable, NotFound, SessionGone, Unauthorized, WrapperError
from a2a_wrapper.events import Done, Permission, StreamEvent, Text
from a2a_wrapper.runtime import Child, Mount, listen_host, loopback_url, make_child
from a2a_wrapper.sandbox import Sandbox

log = logging.getLogger(__name__)

BACKEND_EXITED = "a2a-wrapper.backend-exited"
_RESTART_BACKOFF = (0.5, 1.0, 2.0, 5.0, 10.0)
_ABORT_GRACE = 5.0
ATTACHED_UNHOOKED = (
    "[%s] attached to an OpenCode the wrapper did not start: the wrapper's tool hook is not installed there, so "
    "only the tool calls it asks permission for are checked"
)
HOOK_MISSING = (
    "OpenCode did not load the wrapper's tool hook, so its tool calls could not be checked before they run; "
    "nothing was run. Check the agent's log for the plugin error."
)


class OpenCodeBackend:
    kind = "opencode"

    def __init__(self, settings: AgentSettings, sandbox: Sandbox | None = None) -> None:
        assert settings.state_dir is not None
        assert isinstance(settings.backend, OpenCodeSettings)
        self._settings = settings.backend
        self._name = settings.card.name
        self._state_dir = settings.state_dir
        self._runtime = settings.runtime
        self._sandbox = sandbox
        self._child: Child | None = None
        self._http: aiohttp.ClientSession | None = None
        self._events: EventStream | None = None
        self.hooks: HookServer | None = None  # sees every tool call; none on an OpenCode we only attach to
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self.restarts = 0

    # lifecycle

    async def start(self) -> None:
        self._settings.workdir.mkdir(parents=True, exist_ok=True)
        if self._settings.base_url:
            log.warning(ATTACHED_UNHOOKED, self._name)
            password = self._settings.password.get_secret_value() if self._settings.password else None
            await self._connect(self._settings.base_url, password)
        else:
            # Listening before OpenCode starts: the plugin we install reaches it from its first tool call on.
            self.hooks = HookServer(self._name, self._hook_socket(), self._parent_of)
            await self.hooks.start()
            await self._spawn()
        assert self._events is not None
        self._tasks.append(asyncio.create_task(self._events.run(), name=f"{self._name}-events"))
        if self._child is not None:
            self._tasks.append(asyncio.create_task(self._supervise(), name=f"{self._name}-supervisor"))
        assert self._events is not None
        async with asyncio.timeout(self._settings.startup_timeout):
            await self._events.connected.wait()
        if not await self.hook_ready(self._settings.startup_timeout):
            raise BackendUnavailable(HOOK_MISSING)

    async def hook_ready(self, timeout: float) -> bool:
        """Whether OpenCode has loaded the tool hook (or runs without one, attached): it loads plugins as it starts
        its instance for the workspace, which the event stream's request does."""
        if self.hooks is None:
            return True
        try:
            async with asyncio.timeout(timeout):
                await self.hooks.loaded.wait()
        except TimeoutError:
            return False
        return True

    async def _parent_of(self, session_id: str) -> str | None:
        """A subagent's session's parent: as the event stream announced it, else as OpenCode keeps it."""
        known = self.events.parent_of(session_id)
        if known is not None:
            return known
        try:
            info = await self.request("GET", f"/session/{session_id}")
        except NotFound:
            return None
        return str(info["parentID"]) if info and info.get("parentID") else None

    def _hook_socket(self) -> Path:
        """The tool hook's socket: the sandbox's short socket folder, else the backend's own folder."""
        if self._sandbox is not None:
            return self._sandbox.socket_path(launch.HOOK_SOCKET)
        return launch.hook_socket(self._state_dir)

    async def _spawn(self) -> None:
        binary = (self._settings.binary or find_binary("opencode")).resolve()
        host = listen_host(self._runtime)
        plan = launch.prepare(binary, self._settings, self._state_dir, dict(os.environ), listen_host=host)
        if self._sandbox is not None:  # the plugin, inside, reaches the hook where the sandbox shows it
            plan.env[launch.HOOK_SOCKET_ENV] = str(self._sandbox.inside(launch.HOOK_SOCKET))
        # In a container or a sandbox: the binary read-only and the backend's folders at their host paths.
        mounts = [Mount(binary, read_only=True), Mount(plan.home)]
        # A sandbox has its own network: the server's port inside is reached through a socket in its folder.
        socket = self._sandbox.socket_path("opencode.sock") if self._sandbox is not None else None
        self._child = make_child(
            f"{self._name}/opencode",
            plan.argv,
            plan.env,
            self._settings.workdir,
            self._runtime,
            agent=self._name,
            mounts=mounts,
            ports=[plan.port],
            sandbox=self._sandbox,
            serve=[(socket.name, plan.port)] if socket else [],
        )
        await self._child.start(launch.READY_LINE)
        match = await self._child.wait_ready(self._settings.startup_timeout)
        await self._connect(loopback_url(match.group(1)), plan.password, socket)

    async def _connect(self, base_url: str, password: str | None, socket: Path | None = None) -> None:
        if self._http is not None:
            await self._http.close()
        headers = {"x-opencode-directory": str(self._settings.workdir)}
        if password:
            headers["Authorization"] = aiohttp.encode_basic_auth(self._settings.username, password)
        self._http = aiohttp.ClientSession(
            base_url=base_url.rstrip("/") + "/",
            timeout=aiohttp.ClientTimeout(total=30, sock_connect=5),
            headers=headers,
            connector=aiohttp.UnixConnector(path=str(socket)) if socket else None,
        )
        if self._events is None:
            self._events = EventStream(self._name, self._http)
        else:
            self._events.use(self._http)
        await self._wait_healthy()

    async def _wait_healthy(self) -> None:
        """Its listening line came first, so a few short tries suffice; refused credentials end it at once."""
        last = "no answer"
        for _ in range(40):
            try:
                answer = await self.request("GET", "/global/health", timeout=3)
                if answer and answer.get("healthy"):
                    return
            except Unauthorized:
                raise
            except BackendError as exc:
                last = str(exc)
            await asyncio.sleep(0.25)
        raise BackendUnavailable(f"OpenCode did not answer its health call: {last}")

    async def stop(self) -> None:
        self._stopping = True
        for task in self._tasks:
            await cancel_and_wait(task)
        self._tasks.clear()
        if self._child is not None:
            await self._child.stop()
        if self.hooks is not None:
            await self.hooks.stop()
        if self._http is not None:
            await self._http.close()

    async def _supervise(self) -> None:
        """A crashed `opencode serve` fails its running turns and is started again, with backoff."""
        attempt = 0
        while True:
            assert self._child is not None and self._events is not None
            code = await self._child.wait()
            if self._stopping:
                return
            log.warning("[%s] opencode (%s) exited with code %s; restarting", self._name, self._child.pid, code)
            self._events.broadcast({"type": BACKEND_EXITED, "properties": {"code": code}})
            if self.hooks is not None:
                self.hooks.loaded.clear()  # the next OpenCode says hello again once it has loaded the hook
            await self._child.stop()
            await asyncio.sleep(_RESTART_BACKOFF[min(attempt, len(_RESTART_BACKOFF) - 1)])
            attempt += 1
            try:
                await self._spawn()
                self.restarts += 1
                attempt = 0
            except WrapperError:
                log.exception("[%s] opencode restart failed", self._name)

    # requests

    async def request(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        if self._http is None:
            raise BackendUnavailable("the OpenCode backend is not started")
        kwargs: dict[str, Any] = {"json": body} if body is not None else {}
        if timeout is not None:
            kwargs["timeout"] = aiohttp.ClientTimeout(total=timeout)
        try:
            async with self._http.request(method, path.lstrip("/"), **kwargs) as response:
                text = await response.text()
                if response.status == 404:
                    raise NotFound(f"OpenCode has no {path}: {text[:300]}")
                if response.status in (401, 403):
                    raise Unauthorized(
                        f"OpenCode refused the credentials ({response.status}); check backend.username and password"
                    )
                if response.status >= 400:
                    raise BackendError(f"OpenCode answered {method} {path} with {response.status}: {text[:300]}")
                return await response.json(content_type=None) if text else None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise BackendUnavailable(f"OpenCode is not reachable ({type(exc).__name__}: {exc})") from exc

    async def health(self) -> dict[str, Any]:
        status: dict[str, Any] = {"kind": self.kind, "restarts": self.restarts}
        if self._child is not None:
            status["pid"] = self._child.pid
            if not self._child.running:
                return {**status, "healthy": False, "error": "the opencode process is not running"}
        try:
            answer = await self.request("GET", "/global/health", timeout=3)
        except BackendError as exc:
            return {**status, "healthy": False, "error": str(exc)}
        return {**status, "healthy": bool(answer and answer.get("healthy")), "version": answer.get("version")}

    # sessions and turns

    async def open_session(self, context_key: str, resume: str | None = None) -> Session:
        if resume:
            try:
                await self.request("GET", f"/session/{resume}")
                return Session(resume, created=False)
            except NotFound:
                log.info("[%s] session %s is gone from OpenCode; creating a new one", self._name, resume)
        created = await self.request("POST", "/session", {"title": f"A2A context {context_key[:64]}"})
        return Session(created["id"], created=True)

    async def close_session(self, session_id: str) -> None:
        await self.request("DELETE", f"/session/{session_id}")

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        """An attached OpenCode outlives us: requests our last run left waiting are rejected, never kept."""
        waiting = [p for p in await self.request("GET", "/permission") or [] if p.get("sessionID") in session_ids]
        for request in waiting:
            await self.request("POST", f"/permission/{request['id']}/reply", {"reply": "reject", "message": reason})
        return len(waiting)

    def turn(self, session: Session, prompt: Prompt) -> "OpenCodeTurn":
        return OpenCodeTurn(self, session, prompt)

    @property
    def mcp_servers(self) -> list[str]:
        return self._settings.enabled_mcp_servers

    @property
    def events(self) -> EventStream:
        if self._events is None:
            raise BackendUnavailable("the OpenCode backend is not started")
        return self._events

    def prompt_body(self, prompt: Prompt) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"type": "text", "text": prompt.text}] if prompt.text else []
        for file in prompt.files:
            part = {"type": "file", "mime": file.media_type, "url": file.url}
            if file.filename:
                part["filename"] = file.filename
            parts.append(part)
        provider_id, _, model_id = self._settings.model.partition("/")
        body: dict[str, Any] = {"parts": parts, "model": {"providerID": provider_id, "modelID": model_id}}
        if self._settings.system_prompt_mode == "replace" and self._settings.system_prompt:
            body["agent"] = launch.REPLACE_AGENT
        else:
            if self._settings.system_prompt:
                body["system"] = self._settings.system_prompt
            if self._settings.agent:
                body["agent"] = self._settings.agent
        return body


class OpenCodeTurn:
    """One prompt and its events until the session is idle."""

    def __init__(self, backend: OpenCodeBackend, session: Session, prompt: Prompt) -> None:
        self._backend = backend
        self._session = session
        self._prompt = prompt
        self._gate: HookGate | None = None  # this turn's tool calls, held by the hook until decided

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._run()

    async def _run(self) -> AsyncIterator[Batch]:
        events = self._backend.events
        subscription = events.subscribe(self._session.id)
        queue = subscription.queue
        translator = Translator(self._backend.mcp_servers)
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
                await self._backend.request(
                    "POST", f"/session/{self._session.id}/prompt_async", self._backend.prompt_body(self._prompt)
                )
            except NotFound as exc:
                raise SessionGone(str(exc)) from exc
            async for batch in batches(queue, partial(self._translate, translator)):
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
            if isinstance(event, Permission) and self._gate is not None and self._gate.decided(event):
                log.debug("session %s: %s (%s) was decided at the hook", self._session.id, event.id, event.tool)
                await self._backend.request("POST", f"/permission/{event.id}/reply", {"reply": "once"})
            else:
                kept.append(event)
        return kept

    async def _messages(self) -> list[dict[str, Any]]:
        return list(await self._backend.request("GET", f"/session/{self._session.id}/message") or [])

    async def _busy(self) -> bool:
        statuses = await self._backend.request("GET", "/session/status")
        return self._session.id in (statuses or {})

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        if permission_id.startswith(HOOK_PREFIX):  # a call the hook holds: the plugin gets the answer
            if self._gate is not None:
                self._gate.settle(permission_id, decision == "allow", reason)
            return
        body = {"reply": "once"} if decision == "allow" else {"reply": "reject", "message": reason}
        await self._backend.request("POST", f"/permission/{permission_id}/reply", body)

    async def answer(self, question_id: str, text: str | None) -> None:
        if text is None:
            await self._backend.request("POST", f"/question/{question_id}/reject", {})
        else:
            await self._backend.request("POST", f"/question/{question_id}/reply", {"answers": [[text]]})

    async def abort(self) -> None:
        """Abort the running turn and wait (bounded) until OpenCode says the session is idle."""
        events = self._backend.events
        subscription = events.subscribe(self._session.id)
        subscription.eager = False
        try:
            await self._backend.request("POST", f"/session/{self._session.id}/abort", {})
            if not await self._busy():
                return
            async with asyncio.timeout(_ABORT_GRACE):
                while (await subscription.queue.get())["type"] not in ("session.idle", BACKEND_EXITED):
                    pass
        except TimeoutError:
            log.warning("session %s was still busy %.0f s after abort", self._session.id, _ABORT_GRACE)
        finally:
            events.unsubscribe(self._session.id, subscription)
