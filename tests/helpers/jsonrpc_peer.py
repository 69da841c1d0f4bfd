"""A JSON-RPC peer over stdio with Content-Length frames, as the Copilot CLI speaks to github-copilot-sdk: run as a
program (`spawn`), it answers requests with what tests and bench/copilot_stdio.py need done on cue. Every
notification and request it sends carries `sent`, its `time.monotonic()` when written (the machine's one clock).

- `echo`: answers with the params;
- `trickle`: the same, written a byte at a time;
- `burst` {n}: n `note` notifications {n, sent} in one write, then the answer "sent";
- `big` {text}: waits 0.3 s (the client's write fills the pipe meanwhile), then answers the text's length;
- `ask` {…}: sends the request `question` with the params and `sent`, answers with the question's result and
  the round trip in seconds;
- `die`: writes a line to stderr and exits 3; `garble`: writes a frame that is not JSON.
"""

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # not imported when run as the peer: the SDK's package takes most of a second to import
    from copilot._jsonrpc import JsonRpcClient

Client = TypeVar("Client", bound="JsonRpcClient")

_STAMP = "the time, 20 wide."
_STAMP_JSON = json.dumps(_STAMP).encode()  # as wide as a monotonic time written "%20.9f" (JSON allows the spaces)


def spawn() -> "subprocess.Popen[bytes]":
    """The peer, spawned as the SDK spawns the CLI: a Popen with three pipes."""
    pipe = subprocess.PIPE
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve())], stdin=pipe, stdout=pipe, stderr=pipe)


@asynccontextmanager
async def connected(client_class: type[Client]) -> AsyncIterator[tuple[Client, "subprocess.Popen[bytes]"]]:
    """A started client of `client_class` (the SDK's JsonRpcClient or a subclass) on a new peer; afterwards the peer
    killed and reaped, the client stopped, the pipes closed."""
    process = spawn()
    client = client_class(process)
    client.start(asyncio.get_running_loop())
    try:
        yield client, process
    finally:
        if process.poll() is None:
            process.kill()
        await asyncio.to_thread(process.wait)
        await client.stop()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read() -> dict[str, Any]:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if line == b"\r\n":
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    message: dict[str, Any] = json.loads(sys.stdin.buffer.read(length))
    return message


def _write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _answer(request: dict[str, Any], result: Any) -> None:
    _write(_frame({"jsonrpc": "2.0", "id": request["id"], "result": result}))


def main() -> None:
    while True:
        request = _read()
        method, params = request.get("method"), request.get("params")
        if method == "echo":
            _answer(request, params)
        elif method == "trickle":
            for byte in _frame({"jsonrpc": "2.0", "id": request["id"], "result": params}):
                _write(bytes([byte]))
                time.sleep(0.001)
        elif method == "burst":
            sent = time.monotonic()
            notes = (
                _frame({"jsonrpc": "2.0", "method": "note", "params": {"n": n, "sent": sent}})
                for n in range(params["n"])
            )
            _write(b"".join(notes) + _frame({"jsonrpc": "2.0", "id": request["id"], "result": "sent"}))
        elif method == "big":
            time.sleep(0.3)
            _answer(request, len(params["text"]))
        elif method == "ask":
            sent = time.monotonic()
            _write(_frame({"jsonrpc": "2.0", "id": 7, "method": "question", "params": {**params, "sent": sent}}))
            result = _read()["result"]
            _answer(request, {"result": result, "round_trip": time.monotonic() - sent})
        elif method == "die":
            sys.stderr.write("the peer gave up\n")
            sys.stderr.flush()
            sys.exit(3)
        elif method == "garble":
            _write(b"Content-Length: 5\r\n\r\nnope!")


if __name__ == "__main__":
    main()
