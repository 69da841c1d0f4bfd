"""Per-app state the tests steer and inspect: scripted steps, the request log, in-flight count."""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from a2a_wrapper.offline_model.steps import Step


class ControlState:
    """Scripted steps (FIFO), every completion request received (body and headers), and how many are being
    answered."""

    def __init__(self) -> None:
        self._script: deque[Step] = deque()
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []  # each request's, as received: what a relay sent, keys included
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._completion_ids = itertools.count(1)
        self._call_ids = itertools.count(1)

    def queue(self, steps: Iterable[Step]) -> int:
        self._script.extend(steps)
        return len(self._script)

    def next_step(self) -> Step | None:
        return self._script.popleft() if self._script else None

    def record(self, body: dict[str, Any], title: bool, headers: dict[str, str] | None = None) -> None:
        self._requests.append({**body, "title": title})
        self._headers.append(headers or {})

    def requests(self) -> list[dict[str, Any]]:
        return list(self._requests)

    def headers(self) -> list[dict[str, str]]:
        """The headers of each request `requests()` lists, in the same order."""
        return list(self._headers)

    def clear(self) -> None:
        self._requests.clear()
        self._headers.clear()
        self._script.clear()

    def snapshot(self) -> dict[str, int]:
        return {
            "requests": len(self._requests),
            "queued_steps": len(self._script),
            "in_flight": self._in_flight,
        }

    def completion_id(self) -> str:
        return f"chatcmpl-offline-{next(self._completion_ids)}"

    def call_id(self) -> str:
        return f"call_{next(self._call_ids)}"

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Count one completion as in flight for the duration of the block."""
        self._in_flight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def wait_idle(self) -> None:
        """Return once no completion is in flight (e.g. after a client hung up mid-stream)."""
        await self._idle.wait()
