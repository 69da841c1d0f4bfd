"""The framing between a stand-in (the wrapper's side) and the sidecar (the backend's container): after a first
byte carrying the descriptors handed over and one JSON line saying what to run, typed frames both ways, each a
kind byte, a 4-byte big-endian length and the payload.

Only the standard library: the stand-in imports it as its sibling module, under `python -I -S`.
"""

import asyncio
import struct

HELLO = b"h"  # stand-in -> sidecar: the connection's first byte, alone, carrying the descriptors (SCM_RIGHTS)
STDIN = b"i"  # stand-in -> sidecar: bytes for the child's stdin
STDIN_END = b"e"  # stand-in -> sidecar: the child's stdin closed
SIGNAL = b"s"  # stand-in -> sidecar: a signal number, as text
STDOUT = b"o"  # sidecar -> stand-in: the child's stdout
STDERR = b"r"  # sidecar -> stand-in: the child's stderr
EXIT = b"x"  # sidecar -> stand-in: the child's exit code, as text (the last frame)
FAILED = b"f"  # sidecar -> stand-in: the child did not start, in a sentence (the last frame)
MAX_HEAD = 16 * 2**20  # the head line: an argv and an environment
_HEADER = struct.Struct(">cI")
MAX_FRAME = 2**20


def frame(kind: bytes, payload: bytes = b"") -> bytes:
    return _HEADER.pack(kind, len(payload)) + payload


async def read_frame(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
    """The next frame, or None when the peer closed; a frame past MAX_FRAME is a broken peer (ValueError)."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError:
        return None
    kind, length = _HEADER.unpack(header)
    if length > MAX_FRAME:
        raise ValueError(f"a frame of {length} bytes")
    try:
        return kind, await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        return None
