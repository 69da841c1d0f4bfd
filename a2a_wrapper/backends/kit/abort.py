"""The bounded wait of an abort: a backend told to stop a turn gets ABORT_GRACE seconds to say it has."""

import asyncio
import logging
from collections.abc import Awaitable

log = logging.getLogger(__name__)

ABORT_GRACE = 5.0


async def wait_stopped(stopped: Awaitable[object], session_id: str) -> None:
    """Waits for the aborted turn to end, at most ABORT_GRACE seconds; one that runs on is logged, not waited for."""
    try:
        async with asyncio.timeout(ABORT_GRACE):
            await stopped
    except TimeoutError:
        log.warning("session %s was still busy %.0f s after abort", session_id, ABORT_GRACE)
