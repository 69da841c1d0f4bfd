"""How deep a request body's arrays and objects nest: one limit for every binding that parses JSON.

Python's parsers recurse per level: a body nested a thousand deep raises RecursionError wherever it is parsed
(the SDK, the message edge), which the caller sees as a 500. Each binding refuses it first with its own
invalid-request error, naming this limit.
"""

import re

MAX_DEPTH = 64
TOO_DEEP = f"Invalid Request: arrays and objects nest past {MAX_DEPTH} levels"

# A string, to its closing quote or to the end of the body (unterminated: the parser stops there too). Possessive,
# so a string with no closing quote costs one pass: `(?:[^"\\]+|\\.)*"` backtracked through every way to split it,
# and 40 bytes (`{"a": "xxx…`) held the event loop for hours.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_INNERMOST = re.compile(rb"\[\]|\{\}")


def nests_past(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the arrays and objects of a JSON body nest deeper than `limit`. Strings dropped (UTF-8 puts no
    ASCII byte inside a multi-byte character), only the brackets kept, then each pass removes the innermost
    pairs: all in C (regex engine, bytes.translate), so many megabytes take milliseconds. A body that is not
    JSON answers as its brackets do: what is left unmatched after `limit` passes counts as too deep."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = _INNERMOST.sub(b"", brackets)
    return bool(brackets)
