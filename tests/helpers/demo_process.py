"""`a2a-wrap demo` in a subprocess, as a user runs it, and the block of free ports it takes."""

import asyncio
import os
import random
import re
import signal
import socket
import sys
from pathlib import Path

A2A_WRAP = Path(sys.executable).parent / "a2a-wrap"  # the venv's script, run without activating the venv

IN_PLACE = "A2A_WRAP_WORKSPACE__MODE"  # the suite's agents work in place (tests/conftest.py)


def free_block(size: int, avoid: range = range(0)) -> int:
    """A port whose next `size - 1` ports are free too (the demo puts its agents right after the registry), below
    the kernel's ephemeral range, as the demo's own 8800 is: a port the system hands out meanwhile (a backend's
    own server, any client's) never lands in the block before the demo's agents have bound it."""
    lowest_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(50):
        base = random.randrange(10000, lowest_ephemeral - size)
        if set(range(base, base + size)) & set(avoid):
            continue
        try:
            for port in range(base, base + size):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise AssertionError("no block of free ports")


class Demo:
    """`a2a-wrap demo` in a subprocess, with a user's environment (XDG_STATE_HOME set, the venv not on PATH)."""

    def __init__(self, process: asyncio.subprocess.Process, port: int) -> None:
        self.process = process
        self.port = port
        self.registry = f"http://127.0.0.1:{port}"
        self.out: list[str] = []
        self.err: list[str] = []
        self._changed = asyncio.Condition()
        assert process.stdout is not None and process.stderr is not None
        self._readers = [
            asyncio.create_task(self._read(process.stdout, self.out)),
            asyncio.create_task(self._read(process.stderr, self.err)),
        ]

    @classmethod
    async def start(cls, state_home: Path, port: int, *args: str, env_extra: dict[str, str] | None = None) -> "Demo":
        env = {
            k: v
            for k, v in os.environ.items()
            if (not k.startswith("A2A_WRAP_") or k == IN_PLACE) and k != "VIRTUAL_ENV"
        }
        env |= env_extra or {}
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if Path(p) != A2A_WRAP.parent)
        env["XDG_STATE_HOME"] = str(state_home)
        process = await asyncio.create_subprocess_exec(
            A2A_WRAP, "demo", "--port", str(port), *args,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=env, cwd=state_home,
        )  # fmt: skip
        return cls(process, port)

    async def _read(self, stream: asyncio.StreamReader, lines: list[str]) -> None:
        async for raw in stream:
            async with self._changed:
                lines.append(raw.decode(errors="replace").rstrip())
                self._changed.notify_all()

    async def printed(self, pattern: str, timeout: float) -> str:
        """The first stdout line matching `pattern`, waited for."""
        regex = re.compile(pattern)
        try:
            async with asyncio.timeout(timeout), self._changed:
                while True:
                    found = next((line for line in self.out if regex.search(line)), None)
                    if found is not None:
                        return found
                    if self.process.returncode is not None:
                        raise AssertionError(f"the demo exited ({self.process.returncode}):\n{self.log()}")
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(f"nothing printed matches {pattern!r}:\n{self.log()}") from None

    async def stop(self, timeout: float = 90) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)
        async with asyncio.timeout(timeout):
            code = await self.process.wait()
        await asyncio.gather(*self._readers)
        return code

    def log(self) -> str:
        return "\n".join(["stdout:", *self.out, "stderr:", *self.err[-40:]])
