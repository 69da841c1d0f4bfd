"""Numbers no A2A object can hold, refused where a body is parsed: one reading for every binding that parses JSON.

Python's parser reads NaN and Infinity, which JSON has not, and reads a number past a double's range (`1e400`, an
integer of 400 digits) as Infinity. Protobuf's JSON, in which every task is stored and read, has no Infinity: a
message whose metadata held one was stored, and every later read of its task failed (a 500). An integer past
4,300 digits stops the parser itself (Python's limit on converting digits), which a2a-sdk answers as an internal
error. `loads` reads JSON as `json.loads` does but raises `NotJson`, naming the number, for all of these.
"""

import json
import math
import re
from typing import Any

# Where such a number can be, in C, so that almost no body is parsed with the checks below: a constant, an
# exponent of 100 or more, or 200 digits in a row (an exponent under 100 needs 209 digits before the point to
# overflow). Strings are not skipped: a hit in one costs only the careful parse.
_MAY_HOLD_ONE = re.compile(r"NaN|Infinity|[eE]\+?0*[1-9][0-9]{2}|[0-9]{200}")
MOST_DIGITS = 308  # an integer of more digits may be past a double's range (1.8e308)
SHOWN = 24


class NotJson(ValueError):
    """A number JSON has not (NaN, Infinity) or no double holds; the message names it."""


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}… ({len(text)} characters)"


def _constant(name: str) -> Any:
    raise NotJson(f"{name} is not JSON (RFC 8259 has no such number)")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NotJson(f"the number {_shown(text)} is past a double's range (it reads as Infinity, which JSON has not)")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MOST_DIGITS:
        _float(text)  # float() takes any number of digits: past 4,300 digits, int() refuses
    return int(text)


_CHECKED = json.JSONDecoder(parse_constant=_constant, parse_float=_float, parse_int=_int)


def loads(text: str) -> Any:
    """The JSON value of `text`; raises NotJson for a number no A2A object can hold, json.JSONDecodeError (a
    ValueError) for text that is not JSON at all, RecursionError as json.loads does."""
    return _CHECKED.decode(text) if _MAY_HOLD_ONE.search(text) else json.loads(text)
