"""The agent's uvicorn server: its main loop wakes once a second while idle, a stop wakes it at once (from the
loop, another thread or a signal), and the Date header it sends still moves on every second."""

import asyncio
import os
import signal
import threading

import aiohttp
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.settings import ServerSettings
from a2a_wrapper.frontend.edge import quiet_server
from a2a_wrapper.frontend.edge.quiet_server import QuietServer
from a2a_wrapper.frontend.edge.server_config import uvicorn_config


def app() -> Starlette:
    return Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))])


class CountingServer(QuietServer):
    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.ticks: list[int] = []

    async def on_tick(self, counter: int) -> bool:
        self.ticks.append(counter)
        return await super().on_tick(counter)


async def started(server: QuietServer) -> asyncio.Task[None]:
    serving = asyncio.create_task(server.serve())
    async with asyncio.timeout(10):
        while not server.started:  # noqa: ASYNC110 (uvicorn offers no started event)
            await asyncio.sleep(0.02)
    return serving


def settings() -> ServerSettings:
    return ServerSettings(port=free_port())


async def test_an_idle_server_looks_once_a_second_and_counts_as_uvicorn_does() -> None:
    server = CountingServer(uvicorn_config(app(), settings()))
    serving = await started(server)
    await asyncio.sleep(2.5)
    server.should_exit = True
    await asyncio.wait_for(serving, 10)
    # uvicorn's own loop would have ticked ~25 times; every count is a whole second of tenths, so the date
    # header and callback_notify run on each look
    assert 3 <= len(server.ticks) <= 5, server.ticks
    assert server.ticks == [10 * n for n in range(len(server.ticks))]


@pytest.mark.parametrize("stopped_by", ["the loop", "another thread", "a signal handler"])
async def test_a_stop_wakes_the_server_at_once(monkeypatch: pytest.MonkeyPatch, stopped_by: str) -> None:
    monkeypatch.setattr(quiet_server, "TICK", 3600.0)  # were the stop not to wake it, it would wait an hour
    server = QuietServer(uvicorn_config(app(), settings()))
    serving = await started(server)
    await asyncio.sleep(0.1)  # the main loop is waiting
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: setattr(server, "should_exit", True))
    try:
        if stopped_by == "the loop":
            server.should_exit = True
        elif stopped_by == "another thread":
            threading.Thread(target=setattr, args=(server, "should_exit", True)).start()
        else:
            os.kill(os.getpid(), signal.SIGUSR1)
        await asyncio.wait_for(serving, 10)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert server.should_exit


async def test_the_date_header_moves_on_with_the_clock() -> None:
    served = settings()
    server = QuietServer(uvicorn_config(app(), served))
    serving = await started(server)
    try:
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{served.port}/"
            async with http.get(url) as first:
                assert await first.text() == "ok"
            await asyncio.sleep(1.6)
            async with http.get(url) as second:
                assert await second.text() == "ok"
        assert first.headers["date"] != second.headers["date"]
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 10)
