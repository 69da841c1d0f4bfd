"""The HTTP side of one OpenCode server: its address and credentials, every request's errors translated once into
the project's (NotFound, Unauthorized, BackendError, BackendUnavailable), and the health call."""

import asyncio
import io
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.payload import TOO_LARGE_BYTES_BODY

from a2a_wrapper import fast_json
from a2a_wrapper.errors import BackendError, BackendUnavailable, NotFound, Unauthorized


class OpenCodeClient:
    def __init__(self, workdir: Path, username: str) -> None:
        self._workdir = workdir
        self._username = username
        self._http: aiohttp.ClientSession | None = None

    async def connect(self, base_url: str, password: str | None, socket: Path | None = None) -> aiohttp.ClientSession:
        """Requests go to `base_url` from now on (through `socket` when the server is reached by one)."""
        await self.close()
        headers = {"x-opencode-directory": str(self._workdir)}
        if password:
            headers["Authorization"] = aiohttp.encode_basic_auth(self._username, password)
        self._http = aiohttp.ClientSession(
            base_url=base_url.rstrip("/") + "/",
            timeout=aiohttp.ClientTimeout(total=30, sock_connect=5),
            headers=headers,
            connector=aiohttp.UnixConnector(path=str(socket)) if socket else None,
        )
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    async def request(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        if self._http is None:
            raise BackendUnavailable("the OpenCode backend is not started")
        kwargs: dict[str, Any] = _json_body(body) if body is not None else {}
        if timeout is not None:
            kwargs["timeout"] = aiohttp.ClientTimeout(total=timeout)
        try:
            async with self._http.request(method, path.lstrip("/"), **kwargs) as response:
                text = await response.text()
                _raise_for(response.status, method, path, text)
                return await response.json(content_type=None) if text else None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise BackendUnavailable(f"OpenCode is not reachable ({type(exc).__name__}: {exc})") from exc

    async def health(self) -> dict[str, Any]:
        """OpenCode's own health answer (`healthy`, `version`); BackendError when it gives none."""
        return dict(await self.request("GET", "/global/health", timeout=3) or {})

    async def wait_healthy(self) -> None:
        """Its listening line came first, so a few short tries suffice; refused credentials end it at once."""
        last = "no answer"
        for _ in range(40):
            try:
                if (await self.health()).get("healthy"):
                    return
            except Unauthorized:
                raise
            except BackendError as exc:
                last = str(exc)
            await asyncio.sleep(0.25)
        raise BackendUnavailable(f"OpenCode did not answer its health call: {last}")


def _json_body(body: Any) -> dict[str, Any]:
    """The request's arguments for a JSON body: printed by orjson, and past aiohttp's 1 MiB for raw bytes (a prompt
    may hold 4 MiB of text) handed over as a file, which aiohttp sends a piece at a time."""
    encoded = fast_json.dumps(body).encode()
    data = io.BytesIO(encoded) if len(encoded) > TOO_LARGE_BYTES_BODY else encoded
    return {"data": data, "headers": {"Content-Type": "application/json"}}


def _raise_for(status: int, method: str, path: str, text: str) -> None:
    if status == 404:
        raise NotFound(f"OpenCode has no {path}: {text[:300]}")
    if status in (401, 403):
        raise Unauthorized(f"OpenCode refused the credentials ({status}); check backend.username and password")
    if status >= 400:
        raise BackendError(f"OpenCode answered {method} {path} with {status}: {text[:300]}")
