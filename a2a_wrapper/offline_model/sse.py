"""Server-sent events shared by every wire format: opening the stream, one event, paced waits."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

from aiohttp import web

logger = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 15.0
Event = tuple[str | None, dict[str, Any]]  # (SSE event name or None, JSON payload)


async def open_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    return response


async def send(response: web.StreamResponse, payload: dict[str, Any], event: str | None = None) -> None:
    """One `data:` event, named by an `event:` line when the wire format names its events."""
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    named = f"event: {event}\n" if event else ""
    await response.write(f"{named}data: {data}\n\n".encode())


async def pause(response: web.StreamResponse, seconds: float) -> None:
    # Simulated model latency; long waits keep the connection warm with SSE comments.
    while seconds > KEEPALIVE_SECONDS:
        await asyncio.sleep(KEEPALIVE_SECONDS)
        await response.write(b": keep-alive\n\n")
        seconds -= KEEPALIVE_SECONDS
    if seconds > 0:
        await asyncio.sleep(seconds)


async def send_paced(response: web.StreamResponse, events: Sequence[Event], duration: float) -> None:
    """Send `events` spread evenly over `duration` seconds (the whole wait up front when there are none)."""
    gap = duration / max(1, len(events))
    for event, payload in events:
        await pause(response, gap)
        await send(response, payload, event)
    if not events:
        await pause(response, duration)


async def stream_events(
    request: web.Request, head: Sequence[Event], body: Sequence[Event], tail: Sequence[Event], duration: float
) -> web.StreamResponse:
    """Send `head` at once, `body` paced over `duration`, then `tail`; a client that leaves ends it quietly."""
    response = await open_stream(request)
    try:
        for event, payload in head:
            await send(response, payload, event)
        await send_paced(response, body, duration)
        for event, payload in tail:
            await send(response, payload, event)
        await response.write_eof()
    except ConnectionResetError:
        logger.debug("client left mid-stream")
    return response
