"""The forms a known byte string takes inside encoded text, as literal fragments that can be searched for.

A value base64-encoded as part of a longer text (`user:token`, a JSON document) lands at one of three byte
alignments; at each, the characters that encode only the value's own bits are the same whatever surrounds it.
Those middles, in the standard and the URL-safe alphabet, find the value wherever it is in a base64 run.
"""

import base64
from urllib.parse import quote, quote_plus


def base64_middles(value: bytes) -> set[str]:
    """At each of the 3 alignments, the base64 characters that depend on `value` alone (standard and URL-safe)."""
    middles = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + value).decode()
        first = -(-8 * shift // 6)  # the first character whose 6 bits all come from `value`
        last = 8 * (shift + len(value)) // 6  # past the last such character
        middle = encoded[first:last]
        middles |= {middle, middle.translate(str.maketrans("+/", "-_"))}
    return middles


def url_forms(value: str) -> set[str]:
    """`value` percent-encoded as a URL's path, query or form would carry it (its raw form left out)."""
    return {quote(value, safe=""), quote(value), quote_plus(value)} - {value}
