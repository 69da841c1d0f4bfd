"""`a2a-wrap status`: the registry's agents as a table."""

from typing import Any

import httpx

from a2a_wrapper.errors import WrapperError
from a2a_wrapper.text_table import text_table

DEFAULT_REGISTRY_URL = "http://127.0.0.1:8800"


def fetch_agents(registry_url: str) -> list[dict[str, Any]]:
    url = registry_url.rstrip("/") + "/agents"
    try:
        response = httpx.get(url, timeout=5)
        response.raise_for_status()
        agents = response.json()["agents"]
    except httpx.HTTPError as exc:
        raise WrapperError(
            f"the registry at {registry_url} is not reachable ({type(exc).__name__}: {exc}); "
            "is `a2a-wrap fleet` (or `a2a-wrap registry`) running there?"
        ) from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise WrapperError(f"{url} did not answer with a registry's agent list") from exc
    return list(agents)


def format_status(agents: list[dict[str, Any]]) -> str:
    if not agents:
        return "the registry lists no agents\n"
    rows = [("name", "state", "url", "backend", "model", "skills", "health", "restarts")]
    for agent in agents:
        rows.append(
            (
                str(agent["name"]),
                str(agent["state"]),
                str(agent["url"]),
                str(agent.get("backend") or "-"),
                str(agent.get("model") or "-"),
                ", ".join(str(skill["id"]) for skill in agent.get("skills") or []) or "-",
                _health(agent.get("last_health")),
                "-" if agent.get("restarts") is None else str(agent["restarts"]),
            )
        )
    return text_table(rows)


def _health(health: dict[str, Any] | None) -> str:
    if not health:
        return "-"
    when = str(health.get("time", ""))[11:19]  # HH:MM:SS of the ISO time
    if health.get("healthy"):
        return f"ok at {when}"
    reason = health.get("error") or f"HTTP {health.get('status_code')}"
    return f"failing at {when}: {reason}"[:60]
