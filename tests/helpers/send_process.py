"""`a2a-wrap send` as a real subprocess, its pipes open, and its stderr read up to a line."""

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


@asynccontextmanager
async def started(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[asyncio.subprocess.Process]:
    """`a2a-wrap send ARGS` running, its stdin, stdout and stderr piped; killed if still running on exit."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "a2a_wrapper",
        "send",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def read_until(stream: asyncio.StreamReader, marker: str) -> str:
    """stderr up to and including the first line holding `marker`."""
    seen = ""
    async with asyncio.timeout(60):
        while marker not in seen:
            line = (await stream.readline()).decode()
            assert line, f"stream ended before {marker!r}; got {seen!r}"
            seen += line
    return seen
