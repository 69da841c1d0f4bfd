"""The registry: GET /agents (optionally ?skill=TAG_OR_ID), GET /agents/{name}, GET /health, the same agents as an
AI Catalog at /.well-known/ai-catalog.json (ai_catalog.py), and the console's routes under /console (console/).
Its root URL, the one a person opens, redirects to the console (to /agents when the registry has none).

Each agent is described as
`{name, url, card_url, state, backend, model, skills: [{id, name, tags}], last_health, restarts, ...}`;
an orchestrator that knows the registry's URL finds every agent's card at its `card_url`.
"""

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import BaseRoute, Route

from a2a_wrapper.fleet.ai_catalog import CATALOG_MEDIA_TYPE, CATALOG_PATH, ai_catalog
from a2a_wrapper.fleet.console.headers import SecurityHeaders

CONSOLE_PATH = "/console"


class Listed(Protocol):
    """An agent the registry lists: one the fleet supervises, or one it only watches."""

    @property
    def name(self) -> str: ...

    @property
    def console_key(self) -> str | None:
        """The key the console presents to the agent's operator endpoint; None when the registry has none."""

    def describe(self) -> dict[str, Any]: ...

    async def refresh(self, http: httpx.AsyncClient) -> None:
        """Call its /health (and read its card when not known yet)."""


def describe_agent(
    name: str, url: str, card_url: str, state: str, card: dict[str, Any] | None, **fields: Any
) -> dict[str, Any]:
    """The registry's entry for one agent; `fields` add backend, model, last_health, restarts and the like."""
    skills = [
        {"id": skill.get("id"), "name": skill.get("name"), "tags": list(skill.get("tags") or [])}
        for skill in (card or {}).get("skills") or []
        if isinstance(skill, dict)
    ]
    known = {key: (card or {}).get(key) for key in ("description", "version")}
    return {"name": name, "url": url, "card_url": card_url, "state": state, "skills": skills, **known, **fields}


def has_skill(entry: dict[str, Any], skill: str) -> bool:
    wanted = skill.casefold()
    return any(
        wanted == str(s["id"]).casefold() or wanted in (str(tag).casefold() for tag in s["tags"])
        for s in entry["skills"]
    )


def build_registry_app(listing: Callable[[], Sequence[Listed]], console: Sequence[BaseRoute] = ()) -> Starlette:
    """`listing` returns the agents of the moment (hot reload changes them); `console` the console's routes,
    every response under /console given the console's security headers."""

    async def agents(request: Request) -> JSONResponse:
        entries = [agent.describe() for agent in listing()]
        skill = request.query_params.get("skill")
        if skill:
            entries = [entry for entry in entries if has_skill(entry, skill)]
        return JSONResponse({"agents": entries})

    async def agent(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        current = listing()
        for listed in current:
            if listed.name == name:
                return JSONResponse(listed.describe())
        known = ", ".join(sorted(listed.name for listed in current)) or "none"
        return JSONResponse({"error": f"no agent named {name!r} in this registry; known: {known}"}, status_code=404)

    async def catalog(request: Request) -> JSONResponse:
        document = ai_catalog([agent.describe() for agent in listing()])
        return JSONResponse(document, media_type=CATALOG_MEDIA_TYPE, headers={"Cache-Control": "no-cache"})

    async def health(request: Request) -> JSONResponse:
        states = [agent.describe()["state"] for agent in listing()]
        return JSONResponse({"status": "ok", "agents": len(states), "running": states.count("running")})

    home = CONSOLE_PATH if console else "/agents"

    async def root(request: Request) -> RedirectResponse:
        return RedirectResponse(home, status_code=307)

    return Starlette(
        routes=[
            Route("/", root, methods=["GET"]),
            Route("/agents", agents, methods=["GET"]),
            Route("/agents/{name}", agent, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route(CATALOG_PATH, catalog, methods=["GET"]),
            *console,
        ],
        middleware=[Middleware(SecurityHeaders, prefix=CONSOLE_PATH)],
    )
