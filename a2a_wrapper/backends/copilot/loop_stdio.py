"""github-copilot-sdk's JSON-RPC client with the CLI's stdout and stdin on the event loop instead of on threads.

The SDK (1.0.27, `copilot._jsonrpc.JsonRpcClient`) reads the CLI's stdout on a thread of its own, which hands each
message to the loop, and writes every message it sends from the loop's thread pool. So each round trip the CLI
makes with the wrapper (the pre-tool hook, three a trivial turn; a permission; the prompt's own request) crossed
four threads: the reader woke, parsed and handed over, the loop answered, a pool thread woke to write. Here the
loop reads the pipe itself (`add_reader`) and writes to it without blocking (`add_writer` while the pipe is full):
the same frames (`Content-Length` headers), the SDK's own handling of responses, requests and cancels
(`_handle_message`), and the same end (`_fail_pending_requests`, then `on_close`, when the stream ends). Only the
stderr reader is still the SDK's thread: it is the CLI's chatter, not the protocol.

A notification is dispatched as it is read (the SDK's reader handed each to the loop's thread), and the messages
read at once are handled for up to READ_SLICE in one pass of the loop: a burst of 300 answer deltas does not hold
the first one behind the parsing of the rest, nor take 300 passes.
"""

import asyncio
import contextlib
import json
import logging
import os
import threading
from typing import Any

from copilot import client as copilot_client
from copilot._jsonrpc import JsonRpcClient, ProcessExitedError, _CompletionCancellation

from a2a_wrapper.backends.base import READ_SLICE

log = logging.getLogger(__name__)

READ_SIZE = 256 * 1024
HEADER_END = b"\r\n\r\n"


class LoopJsonRpcClient(JsonRpcClient):
    def __init__(self, process: Any) -> None:
        super().__init__(process)
        self._received = bytearray()  # read from stdout, not yet handled
        self._stdout_ended = False
        self._handling = False  # a pass of the loop that handles what was received is scheduled
        self._unsent = bytearray()  # written to stdin's pipe once it has room
        self._sending: list[tuple[int, asyncio.Future[None]]] = []  # (bytes left to write before it is whole, waiter)
        self._stdout_fd = -1
        self._stdin_fd = -1

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if self._running:
            return
        self._running = True
        self._loop = loop or asyncio.get_running_loop()
        if self.process.stderr:
            self._stderr_thread = threading.Thread(target=self._stderr_loop, daemon=True)
            self._stderr_thread.start()
        self._stdout_fd = self.process.stdout.fileno()
        self._stdin_fd = self.process.stdin.fileno()
        os.set_blocking(self._stdout_fd, False)
        os.set_blocking(self._stdin_fd, False)
        self._loop.add_reader(self._stdout_fd, self._readable)

    async def stop(self) -> None:
        self._stop_reading()
        self._stop_writing(ProcessExitedError("The client was stopped."))
        await super().stop()

    # stdout

    def _readable(self) -> None:
        try:
            data = os.read(self._stdout_fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._stop_reading()
            self._stdout_ended = True
        self._received += data
        if not self._handling:
            self._handle_ready()

    def _handle_ready(self) -> None:
        """The whole messages received, handled in order for up to READ_SLICE; the rest in the next pass of the loop,
        so that a burst (300 answer deltas in one read) lets the turn take its first text meanwhile. A message that
        cannot be read or handled ends the connection, as it ends the SDK's reader."""
        self._handling = False
        assert self._loop is not None
        until = self._loop.time() + READ_SLICE
        try:
            while (message := self._next_message()) is not None:
                self._handle(message)
                if self._loop.time() >= until:
                    self._handling = True
                    self._loop.call_soon(self._handle_ready)
                    return
        except Exception:
            log.warning("A message from the Copilot CLI could not be read or handled", exc_info=True)
            self._stop_reading()
            self._received.clear()
            self._stdout_ended = True
        if self._stdout_ended:
            self._end()

    def _handle(self, message: dict[str, Any]) -> None:
        """As the SDK's `_handle_message`, but a notification is dispatched now, not handed to the loop's thread:
        this is that thread. Responses, requests and cancels take the SDK's own way."""
        method = message.get("method")
        if "id" in message or not isinstance(method, str) or method == "$/cancelRequest":
            self._handle_message(message)
            return
        params = message.get("params", {})
        handler = self.notification_method_handlers.get(method)
        if handler is not None:
            self._dispatch_notification(handler, params)  # it logs what the handler raises
        elif self.notification_handler is not None:
            try:
                self.notification_handler(method, params)
            except Exception:  # as the loop would log it: one notification, not the connection
                log.exception("handling the Copilot CLI's %s notification failed", method)

    def _next_message(self) -> dict[str, Any] | None:
        """The first whole message received, taken out of the buffer; None while it is not whole (for ever when the
        stream ended inside it, as the SDK's reader ends). ValueError for a frame the SDK's reader would not read
        either (no Content-Length, not JSON)."""
        header_end = self._received.find(HEADER_END)
        if header_end < 0:
            return None
        length = _content_length(bytes(self._received[:header_end]))
        start = header_end + len(HEADER_END)
        if len(self._received) < start + length:
            return None
        body = bytes(self._received[start : start + length])
        del self._received[: start + length]
        message = json.loads(body)
        if not isinstance(message, dict):
            raise ValueError(f"a JSON-RPC message is an object, not {type(message).__name__}")
        return message

    def _end(self) -> None:
        """The SDK reader's end, on a thread as there (it waits up to 1 s for the stderr reader): requests still
        waiting fail with the CLI's exit, and the client learns the connection closed. Runs once: the stream's end
        stops the reading, and only the pass that finds nothing left to handle comes here."""
        if not self._running:
            return
        self._stop_writing(ProcessExitedError("The Copilot CLI closed its output."))
        threading.Thread(target=self._reader_ended, daemon=True).start()

    def _reader_ended(self) -> None:
        self._fail_pending_requests()
        if self.on_close is not None:
            self.on_close()

    def _stop_reading(self) -> None:
        if self._stdout_fd >= 0 and self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(OSError, ValueError):  # its file already closed
                self._loop.remove_reader(self._stdout_fd)

    # stdin

    async def _send_message(
        self, message: dict[str, Any], *, completion_cancellation: _CompletionCancellation | None = None
    ) -> None:
        """The message written as the SDK writes it (a Content-Length frame; a `$/cancelRequest` right after when
        its request was cancelled meanwhile); returns once it is all in the pipe."""
        try:
            if self.process.poll() is not None or self._transport_closed:
                raise BrokenPipeError
            self._write(_frame(message))
            if completion_cancellation is not None:
                completion_cancellation.written.set()
                if completion_cancellation.cancelled.is_set():
                    cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": message["id"]}}
                    self._write(_frame(cancel))
        except OSError:
            raise ProcessExitedError(await asyncio.to_thread(self._exit_error)) from None
        if self._unsent:
            waiter = asyncio.get_running_loop().create_future()
            self._sending.append((len(self._unsent), waiter))
            await waiter

    def _exit_error(self) -> str:
        with self._pending_lock:
            error = self._process_exit_error
        return error or self._get_process_exit_error()

    def _write(self, data: bytes) -> None:
        """`data` after what is still unsent; OSError when the pipe is closed (its file closed too: the client's
        stop closes it, and its descriptor's number may be another file's by then)."""
        if self.process.stdin.closed:
            raise BrokenPipeError("the CLI's input is closed")
        if not self._unsent:
            try:
                written = os.write(self._stdin_fd, data)
            except BlockingIOError:
                written = 0
            data = data[written:]
            if not data:
                return
            assert self._loop is not None
            self._loop.add_writer(self._stdin_fd, self._writable)
        self._unsent += data

    def _writable(self) -> None:
        try:
            if self.process.stdin.closed:
                raise BrokenPipeError("the CLI's input is closed")
            written = os.write(self._stdin_fd, self._unsent)
        except BlockingIOError:
            return
        except OSError as exc:
            self._stop_writing(ProcessExitedError(f"The Copilot CLI stopped reading its input ({exc})."))
            return
        del self._unsent[:written]
        still_sending = []
        for before, waiter in self._sending:
            if before - written > 0:
                still_sending.append((before - written, waiter))
            elif not waiter.done():
                waiter.set_result(None)
        self._sending = still_sending
        if not self._unsent:
            assert self._loop is not None
            self._loop.remove_writer(self._stdin_fd)

    def _stop_writing(self, error: Exception) -> None:
        """What was not written is dropped, and whoever waits for it learns so."""
        if self._unsent and self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(OSError, ValueError):  # its file already closed
                self._loop.remove_writer(self._stdin_fd)
        self._unsent.clear()
        for _, waiter in self._sending:
            if not waiter.done():
                waiter.set_exception(error)
        self._sending = []


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _content_length(header: bytes) -> int:
    for line in header.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
            if length < 0:
                raise ValueError(f"a negative Content-Length: {length}")
            return length
    raise ValueError(f"a frame without Content-Length: {header[:80]!r}")


def use_loop_stdio() -> None:
    """Every CopilotClient made after this talks to its CLI through LoopJsonRpcClient."""
    copilot_client.JsonRpcClient = LoopJsonRpcClient  # type: ignore[misc]
