"""The HTTP side of one OpenCode server: its address and credentials, every request's errors translated once into
the project's (NotFound, Unauthorized, BackendError, BackendUnavailable), and the health call."""

import asyncio
from pathlib import Path
from typing import Any

import aiohttp

from a2a_wrapper import fast_json
from a2a_wrapper.backends.opencode.json_http import JsonHttp, ResponseError
from a2a_wrapper.errors import BackendError, BackendUnavailable, NotFound, Unauthorized

TIMEOUT = 30.0  # seconds a call may take unless it says otherwise


class OpenCodeClient:
    def __init__(self, workdir: Path, username: str, health: tuple[str, str] = ("/global/health", "healthy")) -> None:
        self._workdir = workdir
        self._username = username
        self._health_path, self._healthy_key = health  # the health call, and the key a healthy answer has set
        self._calls: JsonHttp | None = None

    async def connect(self, base_url: str, password: str | None, socket: Path | None = None) -> JsonHttp:
        """Requests go to `base_url` from now on (through `socket` when the server is reached by one); the
        connections returned are also the event stream's."""
        await self.close()
        headers = {"x-opencode-directory": str(self._workdir)}
        if password:
            headers["Authorization"] = aiohttp.encode_basic_auth(self._username, password)
        self._calls = JsonHttp(base_url, headers, socket)
        return self._calls

    async def close(self) -> None:
        if self._calls is not None:
            await self._calls.close()

    async def request(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        if self._calls is None:
            raise BackendUnavailable("the OpenCode backend is not started")
        payload = fast_json.dumps(body).encode() if body is not None else None
        try:
            response = await self._calls.request(method, path, payload, TIMEOUT if timeout is None else timeout)
        except (OSError, asyncio.IncompleteReadError, ResponseError, TimeoutError) as exc:
            raise BackendUnavailable(f"OpenCode is not reachable ({type(exc).__name__}: {exc})") from exc
        text = response.body.decode("utf-8", errors="replace")
        _raise_for(response.status, method, path, text)
        return fast_json.loads(text) if text else None

    async def health(self) -> dict[str, Any]:
        """OpenCode's own health answer (`version`, and 1.x's `healthy`); BackendError when it gives none."""
        return dict(await self.request("GET", self._health_path, timeout=3) or {})

    async def wait_healthy(self) -> dict[str, Any]:
        """OpenCode's first healthy answer. Its listening line came first, so a few short tries suffice; refused
        credentials end it at once."""
        last = "no answer"
        for _ in range(40):
            try:
                if (answer := await self.health()).get(self._healthy_key):
                    return answer
            except Unauthorized:
                raise
            except BackendError as exc:
                last = str(exc)
            await asyncio.sleep(0.25)
        raise BackendUnavailable(f"OpenCode did not answer its health call: {last}")


def _raise_for(status: int, method: str, path: str, text: str) -> None:
    if status == 404:
        raise NotFound(f"OpenCode has no {path}: {text[:300]}")
    if status in (401, 403):
        raise Unauthorized(f"OpenCode refused the credentials ({status}); check backend.username and password")
    if status >= 400:
        raise BackendError(f"OpenCode answered {method} {path} with {status}: {text[:300]}")
