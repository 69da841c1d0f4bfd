"""The OpenCode 2 backend: `opencode serve` (2.x) spawned, driven over its authenticated `/api` and one SSE stream.

Everything about the process is the 1.x backend's (opencode/backend.py): the isolated folders, the sandbox, the
tool hook's socket and its check of who connects, the restarts with backoff. What differs is said here: how it is
launched (opencode2/launch.py), its routes, and its events (one stream for every directory; opencode2/stream.py).
"""

import logging
from pathlib import Path
from typing import Any

from a2a_wrapper.backends.base import Prompt, Session
from a2a_wrapper.backends.opencode.backend import OpenCodeBackend
from a2a_wrapper.backends.opencode.client import OpenCodeClient
from a2a_wrapper.backends.opencode.event_stream import EventStream
from a2a_wrapper.backends.opencode2 import launch
from a2a_wrapper.backends.opencode2.stream import DIALECT
from a2a_wrapper.backends.opencode2.turn import OpenCode2Turn
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import NotFound
from a2a_wrapper.sandbox import Sandbox

log = logging.getLogger(__name__)


class OpenCode2Backend(OpenCodeBackend):
    kind = "opencode2"
    installed = "opencode2"
    dialect = DIALECT
    launcher = staticmethod(launch.prepare)

    def __init__(self, settings: AgentSettings, sandbox: Sandbox | None = None) -> None:
        super().__init__(settings, sandbox)
        self._client = OpenCodeClient(self.settings.workdir, launch.USERNAME, health=("/api/info", "version"))

    async def hook_ready(self, timeout: float) -> bool:
        """Whether OpenCode has loaded the tool hook: 2.x loads plugins as it opens the workdir's location (not for
        the event stream), which listing them does."""
        if self.hooks is not None and not self.hooks.loaded.is_set():
            await self.request("GET", "/api/plugin", timeout=timeout)
        return await super().hook_ready(timeout)

    async def request(
        self, method: str, path: str, body: Any = None, timeout: float | None = None, directory: Path | None = None
    ) -> Any:
        """One call to OpenCode; 2.x knows each session's directory itself (its `location`), so none is added."""
        return await self._client.request(method, path, body, timeout)

    async def _parent_of(self, session_id: str) -> str | None:
        """A subagent's session's parent: as the event stream announced it, else as OpenCode keeps it."""
        known = self.events.parent_of(session_id)
        if known is not None:
            return known
        try:
            info = (await self.request("GET", f"/api/session/{session_id}") or {}).get("data") or {}
        except NotFound:
            return None
        return str(info["parentID"]) if info.get("parentID") else None

    async def open_session(self, context_key: str, resume: str | None = None, directory: Path | None = None) -> Session:
        if resume:
            try:
                await self.request("GET", f"/api/session/{resume}")
                return Session(resume, created=False, directory=directory)
            except NotFound:
                log.info("[%s] session %s is gone from OpenCode; creating a new one", self._name, resume)
        provider_id, _, model_id = self.settings.model.partition("/")
        body = {
            "title": f"A2A context {context_key[:64]}",
            "model": {"providerID": provider_id, "id": model_id},
            "location": {"directory": str(directory or self.settings.workdir)},
        }
        if self.settings.agent:
            body["agent"] = self.settings.agent
        created = (await self.request("POST", "/api/session", body))["data"]
        return Session(created["id"], created=True, directory=directory)

    async def close_session(self, session_id: str) -> None:
        await self.request("DELETE", f"/api/session/{session_id}")

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        """Requests an earlier run left waiting are rejected, never kept (with the sentence, which 2.x carries)."""
        pending = (await self.request("GET", "/api/permission/request") or {}).get("data") or []
        waiting = [p for p in pending if p.get("sessionID") in session_ids]
        for request in waiting:
            path = f"/api/session/{request['sessionID']}/permission/{request['id']}/reply"
            await self.request("POST", path, {"decision": "reject", "message": reason})
        return len(waiting)

    def turn(self, session: Session, prompt: Prompt) -> OpenCode2Turn:  # type: ignore[override]
        return OpenCode2Turn(self, session, prompt)

    def events_for(self, directory: Path | None) -> EventStream:
        """2.x serves every directory's events on one stream."""
        return self.events
