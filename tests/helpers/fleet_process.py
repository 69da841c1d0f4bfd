"""Helpers for the fleet tests: agent folders written from test settings, `a2a-wrap fleet` run as a user runs it."""

import asyncio
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.settings import AgentSettings

IN_PLACE = "A2A_WRAP_WORKSPACE__MODE"  # the suite's agents work in place (tests/conftest.py)


def agent_config(folder: Path, name: str, settings: AgentSettings, **extra: Any) -> Path:
    """`folder/name/config.yaml`: the test settings' OpenCode on the offline model, its own port and state."""
    backend = settings.backend
    assert backend.kind == "opencode" and backend.provider is not None
    config: dict[str, Any] = {
        "card": {"name": name, **extra.pop("card", {})},
        "server": {"port": free_port()},
        "backend": {
            "kind": "opencode",
            "binary": str(extra.pop("binary", backend.binary)),
            "model": backend.model,
            "provider": {**backend.provider.model_dump(mode="json"), "api_key": "not-needed"},
            "workdir": "workspace",
        },
        "state_dir": str(folder.parent / "state" / name),
        "auto_approve": True,
        **extra,
    }
    path = folder / name / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


def port_of(config: Path) -> int:
    return int(yaml.safe_load(config.read_text())["server"]["port"])


class FleetProcess:
    """`a2a-wrap fleet ...` in a subprocess; its log lines (stderr) and what it prints (stdout) kept, so that tests
    can wait for one."""

    def __init__(self, process: asyncio.subprocess.Process, registry: str) -> None:
        self.process = process
        self.registry = registry
        self.lines: list[str] = []
        self.out: list[str] = []
        self._changed = asyncio.Condition()
        assert process.stderr is not None and process.stdout is not None
        self._readers = [
            asyncio.create_task(self._read(process.stderr, self.lines)),
            asyncio.create_task(self._read(process.stdout, self.out)),
        ]

    @classmethod
    async def start(
        cls, *args: str, port: int | None = None, env_extra: dict[str, str] | None = None
    ) -> "FleetProcess":
        """`env_extra`: variables the fleet's environment adds (an operator's or a remote agent's key)."""
        port = port or free_port()
        env = {k: v for k, v in os.environ.items() if (not k.startswith("A2A_WRAP_") or k == IN_PLACE)} | (
            env_extra or {}
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "a2a_wrapper", *args, "--port", str(port),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=env,
        )  # fmt: skip
        return cls(process, f"http://127.0.0.1:{port}")

    async def _read(self, stream: asyncio.StreamReader, lines: list[str]) -> None:
        async for raw in stream:
            async with self._changed:
                lines.append(raw.decode(errors="replace").rstrip())
                self._changed.notify_all()

    async def wait_for_line(self, pattern: str, timeout: float = 60, printed: bool = False) -> str:
        """The first log line (`printed`: stdout line) matching `pattern`, waited for."""
        regex = re.compile(pattern)
        lines = self.out if printed else self.lines
        try:
            async with asyncio.timeout(timeout), self._changed:
                seen = 0
                while True:
                    for line in lines[seen:]:
                        if regex.search(line):
                            return line
                    seen = len(lines)
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(f"no line matches {pattern!r}; fleet log:\n{self.log()}") from None

    async def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 60) -> int:
        if self.process.returncode is None:
            self.process.send_signal(sig)
        async with asyncio.timeout(timeout):
            code = await self.process.wait()
        await asyncio.gather(*self._readers)
        return code

    def log(self) -> str:
        return "\n".join(["stdout:", *self.out[-20:], "stderr:", *self.lines[-60:]])


async def agents(http: httpx.AsyncClient, registry: str, query: str = "") -> dict[str, dict[str, Any]]:
    response = await http.get(registry + "/agents" + query)
    response.raise_for_status()
    return {agent["name"]: agent for agent in response.json()["agents"]}


async def wait_until(
    http: httpx.AsyncClient, fleet: FleetProcess, check: Any, timeout: float = 90
) -> dict[str, dict[str, Any]]:
    """Polls the registry until `check(agents)` holds; the fleet's log is shown if it never does."""
    listed: dict[str, dict[str, Any]] = {}
    try:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    listed = await agents(http, fleet.registry)
                    if check(listed):
                        return listed
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.3)
    except TimeoutError:
        raise AssertionError(f"not reached; registry: {listed}\nfleet log:\n{fleet.log()}") from None


def running(*names: str) -> Any:
    return lambda listed: all(listed.get(name, {}).get("state") == "running" for name in names)


def backend_pid(agent: dict[str, Any]) -> int:
    return int(agent["last_health"]["backend"]["pid"])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def processes_under(folder: Path) -> list[str]:
    """Every live process whose working folder is inside `folder` (agents and their backends run there)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = (proc / "cwd").readlink()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.is_relative_to(folder) and alive(int(proc.name)):
            found.append(f"{proc.name}: {cmdline[:150]}")
    return found
