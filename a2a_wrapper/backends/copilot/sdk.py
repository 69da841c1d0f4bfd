"""The Copilot CLI as the SDK runs it: one `copilot --headless --stdio` child behind a `CopilotClient`, started
within a deadline, its pid and exit watched, stopped with no child left behind whatever the SDK reports.

The SDK's timestamps are parsed by the standard library (`timestamps`), its session events keep their data as the
CLI sent it unless the SDK reads it (`light_events`), its stdio is read and written on the event loop
(`loop_stdio`), and its own log noise is quieted once: its fallback after `session.sendAndWait` is refused (-32601
on CLI 1.0.102, a harmless version mismatch) is dropped, and the CLI's stderr chatter becomes DEBUG.
"""

import asyncio
import logging
import subprocess
from pathlib import Path

from copilot import CopilotClient, RuntimeConnection
from copilot.client import StdioRuntimeConnection

from a2a_wrapper.backends.copilot.launch import Launch
from a2a_wrapper.backends.copilot.light_events import light_events
from a2a_wrapper.backends.copilot.loop_stdio import use_loop_stdio
from a2a_wrapper.backends.copilot.timestamps import fast_timestamps
from a2a_wrapper.config.backends import CopilotSettings
from a2a_wrapper.errors import BackendUnavailable
from a2a_wrapper.sandbox import Sandbox

log = logging.getLogger(__name__)

_JSONRPC = "copilot._jsonrpc"


async def start_client(plan: Launch, settings: CopilotSettings, sandbox: Sandbox | None) -> CopilotClient:
    """A started client whose CLI answers, or BackendUnavailable with the CLI's own words."""
    quiet_sdk_logs()
    fast_timestamps()
    light_events()
    use_loop_stdio()
    connection, env = _connection(plan, sandbox)
    client = CopilotClient(
        connection=connection,
        working_directory=str(settings.workdir),
        env=env,
        base_directory=str(plan.copilot_home),  # no github_token: the SDK would put it in the CLI's environment
        use_logged_in_user=False,
    )
    try:
        async with asyncio.timeout(settings.startup_timeout):
            await client.start()
    except BaseException as exc:
        await force_stop(client)
        if isinstance(exc, Exception):  # RuntimeError with the CLI's stderr, TimeoutError, JsonRpcError, OSError
            raise BackendUnavailable(f"The Copilot CLI did not start: {exc or 'no answer in time'}") from exc
        raise
    return client


def _connection(plan: Launch, sandbox: Sandbox | None) -> tuple[StdioRuntimeConnection, dict[str, str]]:
    """The CLI by its path (never the SDK's download); in the sandbox, bubblewrap runs it and the SDK's own
    arguments follow the CLI's path."""
    if sandbox is None:
        return RuntimeConnection.for_stdio(path=str(plan.binary)), plan.env
    binary = Path(plan.binary).resolve()
    # No new session for the SDK's child otherwise: it would share the wrapper's terminal.
    wrapped = sandbox.wrap(
        [str(binary)],
        plan.env,
        own=plan.writable,
        programs=[binary.parent, plan.program.folder],  # read-only: the code the CLI runs at each start
        given=plan.given,
        new_session=True,
    )
    bwrap, *arguments = wrapped.argv
    return RuntimeConnection.for_stdio(path=bwrap, args=arguments), wrapped.env


def cli_process(client: CopilotClient | None) -> "subprocess.Popen[bytes] | None":
    """The CLI child the SDK spawned (it keeps it private; we need its pid and exit)."""
    return getattr(client, "_cli_process", None) if client is not None else None


async def stop(client: CopilotClient) -> None:
    """The SDK's graceful stop, then no CLI left behind whatever it reported."""
    process = cli_process(client)
    try:
        await client.stop()
    except Exception as exc:  # an ExceptionGroup of StopErrors: logged, the process is still reaped below
        log.warning("copilot client stop reported: %s", exc)
    await _reap(process)


async def force_stop(client: CopilotClient) -> None:
    process = cli_process(client)
    try:
        await client.force_stop()
    except Exception as exc:
        log.debug("copilot client force_stop reported: %s", exc)
    await _reap(process)


async def _reap(process: "subprocess.Popen[bytes] | None") -> None:
    if process is None:
        return
    if process.poll() is None:
        process.kill()
        await asyncio.to_thread(process.wait)
    for pipe in (process.stdin, process.stdout, process.stderr):  # the SDK leaves some of them open
        if pipe is not None:
            pipe.close()


class _SdkNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "-32601" in message or "sendAndWait" in message:
            return False
        if message.startswith("[CLI] "):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(_JSONRPC).isEnabledFor(logging.DEBUG)
        return True


def quiet_sdk_logs() -> None:
    logger = logging.getLogger(_JSONRPC)
    if not any(isinstance(existing, _SdkNoise) for existing in logger.filters):
        logger.addFilter(_SdkNoise())
