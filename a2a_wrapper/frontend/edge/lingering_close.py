"""A close that lets its last response arrive while the client is still sending.

Closing a socket whose client is still sending (a body refused with 408 or 413 mid-way, a 400 for bad bytes)
makes the kernel answer the bytes that follow with a reset, and a reset can reach the client before it has read
the response, which it then never sees (RFC 9112 §9.6). uvicorn closes at once. `LingeringTransport` stands in
for the connection's transport: asked to close while the request is not whole, it sends the rest of what is
written and then a FIN, and reads and drops what the client still sends, until the client ends its side or
`LINGER_SECONDS` pass — as Apache's and nginx's lingering close do.
"""

import asyncio
from collections.abc import Callable
from typing import Any

LINGER_SECONDS = 2.0


class LingeringTransport(asyncio.Transport):
    """`transport` with a lingering `close()` while `unread()` says the client may still be sending."""

    def __init__(self, transport: asyncio.Transport, unread: Callable[[], bool]) -> None:
        super().__init__()
        self._transport = transport
        self._unread = unread
        self._linger: asyncio.TimerHandle | None = None

    @property
    def lingering(self) -> bool:
        """Closed to the app: what the client still sends is to be dropped."""
        return self._linger is not None

    def close(self) -> None:
        transport = self._transport
        if self.lingering or transport.is_closing() or not self._unread() or not transport.can_write_eof():
            self._stop_lingering()
            transport.close()
            return
        transport.write_eof()  # after what is written: a FIN, which the client reads as the response's end
        transport.resume_reading()  # the client's bytes keep being taken, so none is answered with a reset
        self._linger = asyncio.get_running_loop().call_later(LINGER_SECONDS, self._end_lingering)

    def _end_lingering(self) -> None:
        self._linger = None
        self._transport.close()

    def _stop_lingering(self) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None

    def abort(self) -> None:
        self._stop_lingering()
        self._transport.abort()

    def is_closing(self) -> bool:
        return self.lingering or self._transport.is_closing()

    def write(self, data: Any) -> None:
        self._transport.write(data)

    def writelines(self, list_of_data: Any) -> None:
        self._transport.writelines(list_of_data)

    def write_eof(self) -> None:
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def pause_reading(self) -> None:
        if not self.lingering:
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()
