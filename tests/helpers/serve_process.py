"""`a2a-wrap serve --config FILE` as a real subprocess, and waiting until its /health answers."""

import asyncio
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx


def serve_config(settings: Any, name: str, state_dir: Path, **extra: Any) -> dict[str, Any]:
    """A config file's content for `a2a-wrap serve`: the test settings' OpenCode on the offline model (no key: none
    is set), the settings' port, `state_dir`, and `extra` sections."""
    backend = settings.backend
    provider = backend.provider.model_dump(mode="json", exclude_none=True)
    return {
        "card": {"name": name},
        "server": {"port": settings.server.port},
        "backend": {"kind": "opencode", "binary": str(backend.binary), "model": backend.model, "provider": provider},
        "state_dir": str(state_dir),
        **extra,
    }


async def start_serve(config: Path, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    """`env`, when given, is added to this process's environment for the agent's."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "a2a_wrapper",
        "serve",
        "--config",
        str(config),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **env} if env is not None else None,
    )


async def wait_healthy(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    async with asyncio.timeout(60):
        while True:
            try:
                response = await http.get(url + "/health")
                if response.status_code == 200:
                    return dict(response.json())
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)


@dataclass
class LoggedServe:
    """A started `a2a-wrap serve` and the lines of its log read so far (`read_log` reads them as they come)."""

    url: str
    process: asyncio.subprocess.Process
    log: list[str] = field(default_factory=list)

    @property
    def jsonrpc(self) -> str:
        return self.url + "/a2a/jsonrpc"

    def lines(self, words: str) -> list[str]:
        return [line for line in self.log if words in line]


async def read_log(served: LoggedServe) -> None:
    """Until the process closes its stderr: each line into `served.log` (the pipe never fills)."""
    assert served.process.stderr is not None
    async for line in served.process.stderr:
        served.log.append(line.decode(errors="replace").rstrip())
