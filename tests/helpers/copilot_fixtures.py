"""The Copilot backend section for tests: the managed Copilot CLI on the offline model (BYOK, offline mode)."""

import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.offline_model import MODEL_ID, OfflineModel
from a2a_wrapper.offline_model.server import CONTROL

# Copilot over ACP unpacks its CLI (~235 MB) into $XDG_CACHE_HOME/copilot/pkg on its first run (10 s and more here);
# the Copilot backend runs the package the wrapper unpacked once per binary instead (backends/copilot/program.py).
# Every test that runs the CLI shares this one cache, kept between runs, apart from the user's. It holds that package
# and per-server MCP tool listings keyed by the server's config; sessions and config live in COPILOT_HOME (and
# HOME), which stay per agent, so no test sees another's sessions.
COPILOT_CACHE = Path(tempfile.gettempdir()) / f"a2a-wrapper-tests-copilot-cache-{os.getuid()}"


def copilot_backend(offline_model: OfflineModel, workdir: Path) -> dict[str, Any]:
    """The `backend:` section of AgentSettings for a Copilot agent on the offline model."""
    return {
        "kind": "copilot",
        "binary": find_binary("copilot"),
        "workdir": workdir,
        "model": MODEL_ID,
        "provider": {"type": "openai", "base_url": offline_model.base_url, "api_key": "offline"},
        "env": {"XDG_CACHE_HOME": str(COPILOT_CACHE)},
    }


@asynccontextmanager
async def fake_github() -> AsyncIterator[OfflineModel]:
    """The offline model also serving what the Copilot CLI asks of GitHub and of the Copilot API before a turn on
    a GitHub-hosted model (the routes of notes/copilot.md §4): any token is taken, and every request is recorded
    with its headers for the test to see where the token went."""
    model = OfflineModel()
    model.app.router.add_get("/copilot_internal/user", _user)
    model.app.router.add_get("/models", _models)
    model.app.router.add_route("*", "/{tail:(?:copilot_internal|mcp)/.*}", _other)
    async with model:
        yield model


def github_backend(model: OfflineModel, workdir: Path) -> dict[str, Any]:
    """Copilot on its GitHub-hosted model, GitHub and the Copilot API being `fake_github` (the CLI's own
    undocumented variables point it there); the token comes from the wrapper's environment."""
    section = copilot_backend(model, workdir)
    del section["provider"]
    section["env"] |= {"COPILOT_API_URL": model.url, "COPILOT_DEBUG_GITHUB_API_URL": model.url}
    return section


async def _user(request: web.Request) -> web.Response:
    _record(request)
    api = f"http://{request.host}"
    return web.json_response({"login": "octo", "copilot_plan": "individual", "endpoints": {"api": api}})


async def _models(request: web.Request) -> web.Response:
    _record(request)
    supports = {"streaming": True, "tool_calls": True, "parallel_tool_calls": True}
    limits = {"max_context_window_tokens": 128000, "max_output_tokens": 4096, "max_prompt_tokens": 100000}
    capabilities = {"type": "chat", "family": "offline", "supports": supports, "limits": limits}
    model = {"id": MODEL_ID, "name": MODEL_ID, "capabilities": capabilities, "policy": {"state": "enabled"}}
    return web.json_response({"data": [{**model, "object": "model", "model_picker_enabled": True}]})


async def _other(request: web.Request) -> web.Response:
    _record(request)
    return web.json_response({}, status=404 if request.path.startswith("/mcp/") else 200)


def _record(request: web.Request) -> None:
    request.app[CONTROL].record({"path": request.path}, False, dict(request.headers))
