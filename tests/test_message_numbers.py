"""A message holding Infinity or NaN is refused, naming where; finite numbers, and bytes that only look like one of
those doubles in the message's encoding, pass. Pure: the message as every binding hands it to the handler."""

import struct

import pytest
from a2a.types import Message, Part
from a2a.utils.errors import InvalidParamsError
from google.protobuf import struct_pb2

from a2a_wrapper.frontend.handler.message_numbers import check_numbers


def nested(number: float, depth: int = 3) -> struct_pb2.Value:
    value = struct_pb2.Value(number_value=number)
    for _ in range(depth):
        outer = struct_pb2.Value()
        outer.list_value.values.add().struct_value.fields["x"].CopyFrom(value)
        value = outer
    return value


@pytest.mark.parametrize(
    ("message", "says"),
    [
        (Message(metadata={"n": float("inf")}), "metadata holds Infinity"),
        (Message(parts=[Part(text="a"), Part(data=nested(float("-inf")))]), "parts[1].data holds -Infinity"),
        (Message(parts=[Part(text="a", metadata={"n": float("nan")})]), "parts[0].metadata holds NaN"),
        (Message(parts=[Part(data=nested(float("inf"), depth=12))]), "parts[0].data holds Infinity"),
    ],
)
def test_a_number_json_has_not_is_refused_naming_where(message: Message, says: str) -> None:
    with pytest.raises(InvalidParamsError) as refused:
        check_numbers(message)
    assert f"The message's {says}: JSON has no such number" in str(refused.value.message)


def test_finite_numbers_and_bytes_shaped_like_infinity_pass() -> None:
    looks_infinite = b"\x11" + struct.pack("<d", float("inf"))  # a number's tag and Infinity, in a file's bytes
    finite = nested(1.7976931348623157e308)
    finite.list_value.values.add(number_value=-5e-324)
    check_numbers(Message(metadata={"n": -1e308}, parts=[Part(raw=looks_infinite), Part(data=finite)]))
