"""What the registry learns of an agent from outside: its /health answer and its card."""

from datetime import UTC, datetime
from typing import Any

import httpx

HEALTH_TIMEOUT = 5.0


async def probe_health(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    """`{time, healthy, status_code, status, backend}` from GET {url}/health; `{time, healthy, error}` if no answer."""
    at = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        response = await http.get(url + "/health", timeout=HEALTH_TIMEOUT)
    except httpx.HTTPError as exc:
        return {"time": at, "healthy": False, "error": f"not reachable ({type(exc).__name__}: {exc})"}
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    return {
        "time": at,
        "healthy": response.status_code == 200,
        "status_code": response.status_code,
        "status": body.get("status"),
        "backend": body.get("backend"),
    }


async def fetch_card(http: httpx.AsyncClient, card_url: str) -> dict[str, Any] | None:
    try:
        response = await http.get(card_url, timeout=HEALTH_TIMEOUT)
        card = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return card if isinstance(card, dict) else None
