"""Knowing a turn is under way: the offline model has received the prompt that carries a marker."""

import asyncio
import json
import uuid

from a2a_wrapper.offline_model import OfflineModel


def marker(word: str) -> str:
    """A word no other test's prompt carries (the offline model is shared by the whole session)."""
    return f"{word}-{uuid.uuid4().hex[:8]}"


async def wait_until_the_model_receives(model: OfflineModel, marker: str, timeout: float = 30) -> None:
    """Returns once a completion request carrying `marker` has reached the model: the backend's turn has started."""
    async with asyncio.timeout(timeout):
        while not any(marker in json.dumps(request) for request in model.control.requests()):  # noqa: ASYNC110
            await asyncio.sleep(0.05)  # the offline model offers no event for a request received
