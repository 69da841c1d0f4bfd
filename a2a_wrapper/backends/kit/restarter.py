"""A backend's agent process started again each time it dies, paced by the shared crash backoff, until stopped.

The backend says how to wait for its process, what its death means (fail the running turns, let go of the
process) and how to start it again; the restarter is the loop between them, kept as one task.
"""

import asyncio
import logging
from typing import Protocol

from a2a_wrapper.background import cancel_and_wait
from a2a_wrapper.backoff import Backoff, CrashHistory
from a2a_wrapper.errors import WrapperError

log = logging.getLogger(__name__)

# A backend never gives up on its process: meanwhile its agent's /health answers 503 and the fleet decides.
BACKEND_BACKOFF = Backoff(backoff=0.5, max_backoff=10.0, window=60.0)


class Restartable(Protocol):
    @property
    def pid(self) -> int | str | None:
        """The running process's id (a container's short id), for the log."""

    async def wait_exit(self) -> int:
        """The running process's exit code, once it has exited."""

    async def exited(self, code: int) -> None:
        """The process died: its running turns fail and it is let go."""

    async def spawn(self) -> None:
        """A new process, started and ready; raises WrapperError when it cannot be."""


class Restarter:
    def __init__(self, name: str, process: Restartable) -> None:
        self._name = name
        self._process = process
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.restarts = 0  # times the process was started again after it died

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"{self._name}-restarter")

    async def stop(self) -> None:
        """No restart from now on: the backend is stopping its process itself."""
        self._stopping = True
        if self._task is not None:
            await cancel_and_wait(self._task)

    async def _run(self) -> None:
        crashes = CrashHistory(BACKEND_BACKOFF)
        loop = asyncio.get_running_loop()
        while True:
            code = await self._process.wait_exit()
            if self._stopping:
                return
            log.warning("[%s] pid %s exited with code %s; restarting", self._name, self._process.pid, code)
            await self._process.exited(code)
            while not await self._started_after(crashes.delay(loop.time())):
                pass
            self.restarts += 1

    async def _started_after(self, delay: float) -> bool:
        log.info("[%s] starting the backend process again in %.1f s", self._name, delay)
        await asyncio.sleep(delay)
        try:
            await self._process.spawn()
        except WrapperError:
            log.exception("[%s] the backend process could not be restarted", self._name)
            return False
        return True
