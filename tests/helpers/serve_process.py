"""`a2a-wrap serve --config FILE` as a real subprocess, and waiting until its /health answers."""

import asyncio
import os
import sys
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
