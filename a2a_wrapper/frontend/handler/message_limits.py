"""What one message may hold: its parts and its text, counted before anything runs or is stored.

Text counts as UTF-8 bytes over all parts: a text part's text, a URL part's URL, a data part's encoded size (its
protobuf size, about its JSON size and free to compute). File bytes (`raw`) are left to the body limit.
"""

from dataclasses import dataclass

from a2a.types import Message, Part
from a2a.utils.errors import InvalidParamsError

from a2a_wrapper.config.settings import ServerSettings


@dataclass(frozen=True, slots=True)
class MessageLimits:
    max_parts: int
    max_text_bytes: int

    @classmethod
    def from_settings(cls, server: ServerSettings) -> "MessageLimits":
        return cls(server.max_parts, server.max_text_bytes)

    def check(self, message: Message) -> None:
        """Raises the protocol's invalid-params error (JSON-RPC -32602, REST 400) naming the limit passed."""
        self.check_parts(len(message.parts))
        size = sum(_text_bytes(part) for part in message.parts)
        if size > self.max_text_bytes:
            raise InvalidParamsError(
                message=f"The message holds {size} bytes of text; server.max_text_bytes allows "
                f"{self.max_text_bytes}. Nothing was run."
            )

    def check_parts(self, parts: int) -> None:
        if parts > self.max_parts:
            raise InvalidParamsError(
                message=f"The message has {parts} parts; server.max_parts allows {self.max_parts}. Nothing was run."
            )


def _text_bytes(part: Part) -> int:
    match part.WhichOneof("content"):
        case "text":
            return len(part.text.encode())
        case "url":
            return len(part.url.encode())
        case "data":
            return part.data.ByteSize()
        case _:
            return 0
