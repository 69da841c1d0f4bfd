"""A child process in its own process group: output logged line by line, readiness by a line, bounded stop."""

import asyncio
import logging
import os
import re
import shutil
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from a2a_wrapper.errors import BackendUnavailable
from a2a_wrapper.spawn import DEVNULL, PIPE, STDOUT, Spawned, spawn

log = logging.getLogger(__name__)

_LEVEL_WORD = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) +")
_LINE_LIMIT = 16 * 1024 * 1024  # with stdio, one protocol message per line: files and diffs make long lines


def dying_with_parent(argv: Sequence[str]) -> list[str]:
    """The command run so that Linux kills it if the wrapper dies without stopping it (no orphans): util-linux's
    setpriv sets the parent-death signal and execs the command (same pid). Not a preexec_fn: Python forks
    for one, and a fork of this threaded process runs gRPC's fork handlers, whose poller then aborted the
    child before its exec (SIGABRT, "epoll_wait error: Bad file descriptor"); without one it uses vfork,
    which runs no handlers and copies nothing."""
    setpriv = shutil.which("setpriv") if sys.platform == "linux" else None
    if setpriv is None:
        log.warning("no setpriv (util-linux) on PATH: %s will outlive the wrapper if it is killed", argv[0])
        return list(argv)
    return [setpriv, "--pdeathsig", "KILL", "--", *argv]


class OutputLog:
    """A child's output, line by line: logged with its name, the last lines kept for error messages, and
    readiness as the first line that matches a pattern (shared by processes and containers)."""

    def __init__(
        self, name: str, level: int | None = logging.DEBUG, on_line: Callable[[str], None] | None = None
    ) -> None:
        self._name = name
        self._on_line = on_line  # also given each line (the fleet keeps each agent's lines in a file)
        self._own_levels = level is None  # a child of ours: each line starts with its level ("WARNING name: ...")
        self._level = logging.INFO if level is None else level
        self._tail: list[str] = []
        self._pattern: re.Pattern[str] | None = None
        self._ready: asyncio.Future[re.Match[str]] | None = None

    def expect(self, pattern: str) -> None:
        self._pattern = re.compile(pattern)
        self._ready = asyncio.get_running_loop().create_future()

    def line(self, line: str) -> None:
        self._tail = [*self._tail[-19:], line]
        shown = line
        if self._own_levels and (word := _LEVEL_WORD.match(line)):
            self._level = logging.getLevelNamesMapping()[word.group(1)]  # lines after it (a traceback) keep it
            shown = line[word.end() :]  # logged at that level: the word would be said twice
        log.log(self._level, "[%s] %s", self._name, shown)
        if self._on_line is not None:
            self._on_line(line)
        if self._ready is not None and not self._ready.done() and self._pattern:
            match = self._pattern.search(line)
            if match:
                self._ready.set_result(match)

    def exited(self, code: int) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(
                BackendUnavailable(f"{self._name} exited with code {code} before it was ready: {self.last()}")
            )

    def stop_waiting(self) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()  # nobody waits for readiness of a child being stopped

    async def wait_ready(self, timeout: float) -> re.Match[str]:
        assert self._ready is not None, "start() with a ready pattern first"
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.shield(self._ready)
        except TimeoutError:
            raise BackendUnavailable(
                f"{self._name} did not become ready within {timeout:.0f} s; last output: {self.last()}"
            ) from None

    def last(self) -> str:
        return " | ".join(self._tail[-5:]) or "(none)"


class ChildProcess:
    """Spawns `argv` in a new session; `wait_ready` returns the first match of the ready pattern.

    With `stdio=True` its stdin and stdout are pipes for a protocol (`stdin`, `stdout`); stderr is logged.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        output_level: int | None = logging.DEBUG,  # None: each line's own level word (an a2a-wrap child)
        stdio: bool = False,
        on_line: Callable[[str], None] | None = None,
        handed_over: Sequence[int] = (),  # descriptors the child gets: the first start closes the wrapper's copies
    ) -> None:
        self.name = name
        self._stdio = stdio
        # the fleet shows its agents' output (and keeps it, with on_line); a backend's is chatter
        self._output = OutputLog(name, output_level, on_line)
        self._argv = list(argv)
        self._env = dict(env)
        self._cwd = cwd
        self._handed_over = tuple(handed_over)
        self._process: Spawned | None = None
        self._pump: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def stdin(self) -> asyncio.StreamWriter:
        assert self._stdio and self._process is not None and self._process.stdin is not None, "start() first"
        return self._process.stdin

    @property
    def stdout(self) -> asyncio.StreamReader:
        assert self._stdio and self._process is not None and self._process.stdout is not None, "start() first"
        return self._process.stdout

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self, ready_pattern: str | None = None) -> None:
        if ready_pattern is not None:
            self._output.expect(ready_pattern)
        try:
            self._process = await spawn(
                dying_with_parent(self._argv),
                cwd=self._cwd,
                env=self._env,
                stdin=PIPE if self._stdio else DEVNULL,
                stdout=PIPE,
                stderr=PIPE if self._stdio else STDOUT,
                limit=_LINE_LIMIT,
                pass_fds=self._handed_over,
            )
        finally:
            for descriptor in self._handed_over:  # the child's alone from now on (or nobody's, if it did not start)
                os.close(descriptor)
            self._handed_over = ()
        log.info("[%s] started %s (pid %s)", self.name, Path(self._argv[0]).name, self._process.pid)
        self._pump = asyncio.create_task(self._read_output(), name=f"{self.name}-output")

    async def wait_ready(self, timeout: float) -> re.Match[str]:
        return await self._output.wait_ready(timeout)

    def last_output(self) -> str:
        return self._output.last()

    async def wait(self) -> int:
        assert self._process is not None
        return await self._process.wait()

    async def _read_output(self) -> None:
        assert self._process is not None
        output = self._process.stderr if self._stdio else self._process.stdout
        assert output is not None
        async for raw in output:
            self._output.line(raw.decode(errors="replace").rstrip())
        code = await self._process.wait()
        self._process.close()  # the pipe to its stdin, if any: nobody reads it any more
        self._output.exited(code)
        log.info("[%s] pid %s exited with code %s", self.name, self._process.pid, code)

    async def stop(self, grace: float = 5.0) -> None:
        """SIGTERM to the group, a bounded wait, then SIGKILL."""
        process = self._process
        if process is None:
            return
        self._output.stop_waiting()
        if process.returncode is None:
            self._signal_group(process.pid, signal.SIGTERM)
            try:
                async with asyncio.timeout(grace):
                    await process.wait()
            except TimeoutError:
                log.warning("[%s] pid %s ignored SIGTERM for %.0f s; killing", self.name, process.pid, grace)
        self._signal_group(process.pid, signal.SIGKILL)  # children left behind in the group, if any
        await process.wait()
        process.close()
        if self._pump is not None:
            await self._pump

    @staticmethod
    def _signal_group(pid: int, sig: signal.Signals) -> None:
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
