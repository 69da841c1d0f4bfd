"""A message holding a number JSON has not (Infinity, NaN) is refused before anything runs or is stored.

Tasks are stored and read as protobuf's JSON, which has neither: a task whose message held one was stored, and
every later read of it failed. The JSON bindings refuse such a body at the edge (frontend/edge/json_numbers.py);
gRPC carries them as plain doubles, so the handler looks at every binding's message: its metadata, and each
part's data and metadata. Walking the values in Python costs about what a2a-sdk's parse of them did (0.5 s for a
data part of 100,000 numbers, a loaded machine), so a pattern over the message's encoding, in C, says first
whether there can be one (26 ms for that part beside 3 MB of text); only then are they walked.
"""

import math
import re
from collections.abc import Iterator

from a2a.types import Message
from a2a.utils.errors import InvalidParamsError
from google.protobuf.struct_pb2 import Struct, Value

# A Value's number is its field 2, a double: the tag byte 0x11, then 8 bytes little-endian. Infinity and NaN are
# the doubles whose exponent bits are all ones, the top 12 bits but the sign. A string can hold these bytes too;
# the walk then decides.
_MAY_HOLD_ONE = re.compile(rb"\x11.{6}[\xf0-\xff][\x7f\xff]", re.DOTALL)


def check_numbers(message: Message) -> None:
    """Raises the protocol's invalid-params error (JSON-RPC -32602, REST 400, gRPC INVALID_ARGUMENT) naming where
    the first such number is."""
    if not _MAY_HOLD_ONE.search(message.SerializeToString()):
        return
    for where, number in _numbers(message):
        if not math.isfinite(number):
            name = "NaN" if math.isnan(number) else "-Infinity" if number < 0 else "Infinity"
            raise InvalidParamsError(
                message=f"The message's {where} holds {name}: JSON has no such number, and the task could not be "
                "stored. Nothing was run."
            )


def _numbers(message: Message) -> Iterator[tuple[str, float]]:
    yield from (("metadata", n) for n in _in_struct(message.metadata))
    for index, part in enumerate(message.parts):
        if part.HasField("data"):
            yield from ((f"parts[{index}].data", n) for n in _in_values([part.data]))
        yield from ((f"parts[{index}].metadata", n) for n in _in_struct(part.metadata))


def _in_struct(struct: Struct) -> Iterator[float]:
    return _in_values(list(struct.fields.values()))


def _in_values(values: list[Value]) -> Iterator[float]:
    """Every number in `values`, however deep (a stack, not recursion: the depth is the sender's)."""
    while values:
        value = values.pop()
        match value.WhichOneof("kind"):
            case "number_value":
                yield value.number_value
            case "struct_value":
                values.extend(value.struct_value.fields.values())
            case "list_value":
                values.extend(value.list_value.values)
