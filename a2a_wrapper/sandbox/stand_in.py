"""Runs in the wrapper's container in place of a backend that runs in the sidecar's (runtime.kind: sidecar).

To the wrapper it is the backend's process: the backend's command line after `--`, its environment, its stdin,
stdout and stderr, the signals it gets and its exit code. It hands all of them to the sidecar over the sidecar's
socket and passes the answer back, so Copilot's SDK, ACP's stdio and OpenCode's start alike run unchanged.

What comes back is the backend's: bytes and an exit code, nothing the stand-in acts on. It holds nothing of the
wrapper's but what the backend is given anyway (its environment), and the listening sockets the wrapper hands the
bridge (`fds`): passed to the sidecar with the connection's first byte (SCM_RIGHTS), never by a path.

While the backend runs, the stand-in watches the places in its backend's folders that the wrapper made for it to
load code from (`watch`: OpenCode's `HOME/.opencode`, its cache's `bin`; Copilot's control entries): those folders
are the backend's, writable by its tools in its container. The first change stops the backend, with a sentence,
before it loads what was planted; the wrapper then starts it afresh and makes those places anew.

Only the standard library: it runs with `python -I -S`, before and apart from the wrapper's packages.
usage: stand_in.py SPEC_JSON -- COMMAND...
  SPEC_JSON: {"socket": the sidecar's, "timeout": seconds to wait for it, "network": "none" | "shared",
              "fds": descriptors to pass on, each at the same number in the command,
              "watch": places to stop the backend at the first change of}
"""

import asyncio
import json
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # `python -I` leaves the script's folder out
import frames  # (its sibling, not the package: the wrapper's packages are not on this path)

_NO_START = 127
_CHANGED = 125  # a place the backend loads code from changed while it ran
_LOST = 255
_RETRY = 0.25
_WATCH_EVERY = 0.05  # seconds: well inside a model's answer to the tool call that planted it


async def _connect(path: str, timeout: float, fds: list[int]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The sidecar's socket, retried until `timeout` (its container may start after the wrapper's); its first
    byte carries `fds`."""
    deadline = time.monotonic() + timeout
    loop = asyncio.get_running_loop()
    while True:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.setblocking(False)
        try:
            await loop.sock_connect(connection, path)
            socket.send_fds(connection, [frames.HELLO], fds)  # an empty socket buffer: never blocks
            return await asyncio.open_unix_connection(sock=connection, limit=frames.MAX_HEAD)
        except OSError as exc:
            connection.close()
            if time.monotonic() >= deadline:
                raise ConnectionError(
                    f"no sidecar answers at {path} after {timeout:.0f} s ({exc.strerror or exc}): is the backend's "
                    "container running `a2a-wrap sidecar` with this folder mounted?"
                ) from exc
            await asyncio.sleep(_RETRY)


async def _stdin_to(writer: asyncio.StreamWriter) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    except (OSError, ValueError):  # no stdin to speak of (a file, /dev/null): nothing for the child's
        writer.write(frames.frame(frames.STDIN_END))
        return
    while data := await reader.read(65536):
        writer.write(frames.frame(frames.STDIN, data))
        await writer.drain()
    writer.write(frames.frame(frames.STDIN_END))
    await writer.drain()


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def _print_of(place: str) -> tuple:  # type: ignore[type-arg]
    """What any write, creation, removal, rename, link or mode change under `place` alters (not reads)."""
    entries = []
    for root, folders, files in os.walk(place):  # never into a link
        for name in ["", *folders, *files]:
            path = os.path.join(root, name) if name else root
            try:
                found = os.lstat(path)
            except FileNotFoundError:
                continue
            entries.append((path, found.st_mode, found.st_ino, found.st_size, found.st_mtime_ns, found.st_nlink))
    if not entries:  # a file, a link, or nothing
        try:
            found = os.lstat(place)
            entries.append((place, found.st_mode, found.st_ino, found.st_size, found.st_mtime_ns, found.st_nlink))
        except FileNotFoundError:
            pass
    return tuple(sorted(entries))


async def _first_change(places: list[str]) -> str:
    """The first of `places` found changed from how it is now."""
    made = {place: _print_of(place) for place in places}
    while True:
        await asyncio.sleep(_WATCH_EVERY)
        for place, before in made.items():
            if _print_of(place) != before:
                return place


async def _relay(reader: asyncio.StreamReader) -> int:
    """The sidecar's frames to this process's stdout and stderr, until the backend's exit code."""
    while (received := await frames.read_frame(reader)) is not None:
        kind, payload = received
        if kind == frames.STDOUT:
            _write_all(1, payload)
        elif kind == frames.STDERR:
            _write_all(2, payload)
        elif kind == frames.EXIT:
            return int(payload)
        elif kind == frames.FAILED:
            print(f"stand-in: the sidecar did not start it: {payload.decode(errors='replace')}", file=sys.stderr)
            return _NO_START
    print("stand-in: the sidecar went away before the backend exited", file=sys.stderr, flush=True)
    return _LOST


async def _run(spec: dict, argv: list[str]) -> int:  # type: ignore[type-arg]
    fds = [int(number) for number in spec.get("fds", [])]
    try:
        reader, writer = await _connect(spec["socket"], float(spec["timeout"]), fds)
    except ConnectionError as exc:
        print(f"stand-in: {exc}", file=sys.stderr, flush=True)
        return _NO_START
    for descriptor in fds:
        os.close(descriptor)  # the sidecar's now: the bridge alone accepts on them
    network = {"mode": spec["network"], "namespace": os.stat("/proc/self/ns/net").st_ino}
    head = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "fds": fds, "network": network}
    writer.write(json.dumps(head).encode() + b"\n")
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(number, writer.write, frames.frame(frames.SIGNAL, str(int(number)).encode()))
    feeding = asyncio.create_task(_stdin_to(writer))
    relaying = asyncio.create_task(_relay(reader))
    watching = asyncio.create_task(_first_change(list(spec.get("watch", []))))
    try:
        await asyncio.wait([relaying, watching], return_when=asyncio.FIRST_COMPLETED)
        if relaying.done():
            return relaying.result()
        print(
            f"stand-in: {watching.result()} changed while the backend ran: it loads code from there, and only the "
            "wrapper makes it. The backend is stopped (closing this connection kills it) and starts afresh.",
            file=sys.stderr,
            flush=True,
        )
        return _CHANGED
    except (OSError, ValueError) as exc:
        print(f"stand-in: the sidecar's connection broke: {exc}", file=sys.stderr, flush=True)
        return _LOST
    finally:
        for task in (feeding, relaying, watching):
            task.cancel()
        writer.close()


def main() -> None:
    spec, separator, *argv = sys.argv[1:]
    assert separator == "--" and argv, __doc__
    sys.exit(asyncio.run(_run(json.loads(spec), argv)))


if __name__ == "__main__":
    main()
