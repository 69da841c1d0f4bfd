"""Requests a backend waits on until the executor answers them (permissions, questions): a future per request id."""

import asyncio
import logging
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

Reply = TypeVar("Reply")


class PendingReplies(Generic[Reply]):
    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[Reply]] = {}

    async def wait(self, request_id: str, announce: Callable[[], object]) -> Reply:
        """Waits for the reply to `request_id`, announced (put on the turn's stream) once it can be settled."""
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        announce()
        try:
            return await future
        finally:
            self._waiting.pop(request_id, None)

    def settle(self, request_id: str, reply: Reply) -> bool:
        """False (and logged) when nothing waits for this id any more: its turn ended, or it was answered."""
        future = self._waiting.get(request_id)
        if future is None or future.done():
            log.info("%s is not waiting for an answer; the answer is dropped", request_id)
            return False
        future.set_result(reply)
        return True

    def settle_all(self, reply_to: Callable[[str], Reply]) -> None:
        """Every request still waiting gets `reply_to(its id)`: the turn is over or the backend is gone."""
        for request_id in list(self._waiting):
            if not self._waiting[request_id].done():
                self.settle(request_id, reply_to(request_id))
