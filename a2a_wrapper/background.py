"""Small asyncio helpers shared by the agent and the backends."""

import asyncio
from typing import Any


async def cancel_and_wait(task: "asyncio.Task[Any]") -> None:
    """Cancel a background task and wait until it has unwound."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
