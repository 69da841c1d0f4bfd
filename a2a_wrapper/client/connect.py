"""From a URL (the agent's base URL or its card URL) to an a2a-sdk client; foreign errors become SendError."""

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import httpx
from a2a.client import AgentCardResolutionError, Client, ClientConfig, ClientFactory
from a2a.client.card_resolver import A2ACardResolver
from a2a.types import AgentCard

from a2a_wrapper.errors import WrapperError

BINDINGS = ["JSONRPC", "HTTP+JSON"]
KEY_HINT = "give its key with --key or --key-env, or a gateway's header with --header"
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a token (RFC 9110)


class SendError(WrapperError):
    """The agent could not be reached or used; the message is one line for the person at the terminal."""


def card_location(url: str) -> tuple[str, str | None]:
    """(base URL, card path): a URL whose path ends in `.json` is the card itself; anything else is the base."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SendError(f"URL {url!r} is not an http(s) URL of an agent or its card")
    if parts.path.endswith(".json"):
        return f"{parts.scheme}://{parts.netloc}", parts.path
    return url.rstrip("/"), None


def parse_headers(given: Sequence[str]) -> dict[str, str]:
    """`Name: value` lines as headers; one that is not is refused, named (a gateway's own key, for example)."""
    headers: dict[str, str] = {}
    for line in given:
        name, colon, value = line.partition(":")
        if not colon or not _HEADER_NAME.fullmatch(name.strip()):
            raise SendError(f"--header {line!r} is not a header: write it as 'Name: value'")
        if any(c in value for c in "\r\n\0"):
            raise SendError(f"--header {name.strip()!r}: a value holds no line break or NUL")
        headers[name.strip()] = value.strip()
    return headers


def http_client(key: str | None, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    """Every request (the card, JSON-RPC, the event streams) carries the key and the headers given.

    No read timeout: a turn may stream quietly for a long time; the agent's own turn limit ends it.
    """
    sent = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(headers={**sent, **(headers or {})}, timeout=httpx.Timeout(30.0, read=None))


async def fetch_card(http: httpx.AsyncClient, url: str) -> AgentCard:
    base, path = card_location(url)
    where = base + (path or "/.well-known/agent-card.json")
    try:
        return await A2ACardResolver(http, base).get_agent_card(relative_card_path=path)
    except AgentCardResolutionError as exc:
        cause = exc.__cause__
        if isinstance(cause, httpx.RequestError):
            raise SendError(f"agent unreachable at {where}: {cause or type(cause).__name__}") from exc
        if exc.status_code in (401, 403):
            refused = f"the agent refused to show its card at {where} (HTTP {exc.status_code})"
            raise SendError(f"{refused}: {KEY_HINT}") from exc
        if exc.status_code is not None:
            raise SendError(f"no agent card at {where}: HTTP {exc.status_code}") from exc
        raise SendError(f"invalid agent card at {where}: {cause or exc}") from exc


def client_for(card: AgentCard, http: httpx.AsyncClient) -> Client:
    config = ClientConfig(streaming=True, httpx_client=http, supported_protocol_bindings=BINDINGS)
    try:
        return ClientFactory(config).create(card)
    except ValueError as exc:
        offered = ", ".join(f"{i.protocol_binding} {i.protocol_version}" for i in card.supported_interfaces) or "none"
        raise SendError(f"the agent card offers no interface this client speaks (offered: {offered})") from exc
