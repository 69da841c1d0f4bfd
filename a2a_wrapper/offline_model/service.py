"""Running the offline model: in-process (`OfflineModel`) or as a blocking server (`run`)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from types import TracebackType

from aiohttp import web

from a2a_wrapper.errors import ConfigError
from a2a_wrapper.offline_model.control import ControlState
from a2a_wrapper.offline_model.server import CONTROL, create_app

logger = logging.getLogger(__name__)

# Streams still open at shutdown (a slow reply nobody reads) are cut after this grace.
SHUTDOWN_GRACE_SECONDS = 0.5


class OfflineModel:
    """The offline model served on host:port (port 0: the OS picks one; `port` then holds the real one).

    Use as `async with OfflineModel() as model:` or with explicit `await start()` / `await stop()`.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.app = create_app()
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def control(self) -> ControlState:
        return self.app[CONTROL]

    async def start(self) -> None:
        """Bind and serve; returns once the socket is listening."""
        # handler_cancellation: a client hanging up cancels its (possibly slow) stream at once.
        runner = web.AppRunner(
            self.app, handler_cancellation=True, access_log=None, shutdown_timeout=SHUTDOWN_GRACE_SECONDS
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
        except OSError as exc:  # a taken port is one sentence
            await runner.cleanup()
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise ConfigError(f"offline model: cannot listen on {self.host}:{self.port} ({reason})") from exc
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = runner.addresses[0][1]
        logger.info("offline model listening on %s", self.base_url)

    async def stop(self) -> None:
        """Stop serving; open streams get a short grace, then are cancelled."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
            logger.info("offline model on %s stopped", self.base_url)

    async def __aenter__(self) -> OfflineModel:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


def run(host: str, port: int) -> None:
    """Serve the offline model on host:port until SIGINT or SIGTERM (blocking; for `a2a-wrap model`)."""
    asyncio.run(_serve(host, port))


async def _serve(host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    for signum in signals:
        loop.add_signal_handler(signum, stop.set)
    try:
        async with OfflineModel(host, port):
            await stop.wait()
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
