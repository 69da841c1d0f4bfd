"""An agent the registry lists but does not run (its own container, another host): known by its card and /health."""

import os
from typing import Any
from urllib.parse import urlsplit

import httpx

from a2a_wrapper.fleet.health import fetch_card, probe_health
from a2a_wrapper.fleet.registry import describe_agent
from a2a_wrapper.fleet.spec import CONSOLE_KEY_ENV, RemoteSpec


class RemoteAgent:
    def __init__(self, spec: RemoteSpec) -> None:
        self.spec = spec
        self.card: dict[str, Any] | None = None
        self.last_health: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        """The fleet file's name for it, else its card's, else host:port until the card is read."""
        if self.spec.name:
            return self.spec.name
        if self.card and self.card.get("name"):
            return str(self.card["name"])
        return urlsplit(self.spec.url).netloc

    @property
    def console_key(self) -> str | None:
        """From the fleet file's `console_key_env`, else the registry's own A2A_WRAP_CONSOLE_KEY (compose sets one
        for the registry and its agents)."""
        return os.environ.get(self.spec.console_key_env or CONSOLE_KEY_ENV) or None

    @property
    def state(self) -> str:
        if self.last_health is None:
            return "unknown"
        if self.last_health["healthy"]:
            return "running"
        return "unhealthy" if "status_code" in self.last_health else "unreachable"

    async def refresh(self, http: httpx.AsyncClient) -> None:
        self.last_health = await probe_health(http, self.spec.url)
        if self.card is None and "status_code" in self.last_health:
            self.card = await fetch_card(http, self.spec.card_url)

    def describe(self) -> dict[str, Any]:
        backend = (self.last_health or {}).get("backend") or {}
        return describe_agent(
            self.name,
            self.spec.url,
            self.spec.card_url,
            self.state,
            self.card,
            backend=backend.get("kind"),
            model=None,
            last_health=self.last_health,
            restarts=None,  # not known: it restarts under its own supervisor
            supervised=False,
        )
