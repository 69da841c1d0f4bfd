"""JSON on the paths every turn takes, by orjson: OpenCode's event stream (some 20 events a trivial turn), each
event an A2A stream sends (a2a-sdk's `json_utils.dumps`), and the task rows' JSON columns. orjson parses and
prints 3-10 times faster than the standard library, and prints compact JSON (no spaces after `,` and `:`).

What orjson refuses, the standard library does as before: an integer past 64 bits, a string holding a lone
surrogate, a key that is not a string (`dumps`), and, on reading, NaN and Infinity. One difference is kept:
`loads` reads an integer past 64 bits as a float, where the standard library keeps it exact; no field of
OpenCode's events holds one. Callers pass JSON values only (orjson would also print a datetime or a dataclass,
which the standard library refuses).
"""

import json
from typing import Any

import orjson


def dumps(obj: Any) -> str:
    """`obj` as compact JSON text, non-ASCII characters as they are (as `json.dumps(ensure_ascii=False)`)."""
    try:
        return orjson.dumps(obj).decode()
    except TypeError:  # orjson.JSONEncodeError: what only the standard library prints
        return json.dumps(obj, ensure_ascii=False)


def loads(text: str | bytes) -> Any:
    """The JSON value of `text`; raises json.JSONDecodeError (a ValueError) for text that is not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN, Infinity: the standard library's JSON, or its error
        return json.loads(text)
