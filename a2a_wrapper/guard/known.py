"""The process's own secrets redacted in whatever common encoding they leave in, as one class of entries.

The wrapper knows the values it holds (provider keys, the GitHub token, callers' and the console's keys): a
tool that prints one of them raw, base64 (standard or URL-safe, at any of the three byte alignments, so also
inside `user:token` encoded whole), hex or percent-encoded is caught by its value, whatever its shape. Each
form becomes a table entry whose first `IDENTIFYING` characters decide it and whose alphabet is its tail, so
that a stream holds back no more than it does for the shapes' table.
"""

from collections.abc import Iterable

from .encodings import base64_middles, url_forms
from .grammar import Tail, cls, lit
from .secrets import SECRETS, Rules, Secret, use

KIND = "known-secret"
SHORTEST = 8  # a shorter value (a PIN, `admin`) would redact ordinary words; such values are not kept secret
IDENTIFYING = 48  # characters of a form that identify it: 48 of hex are 24 bytes of the value
# Each encoding and the characters it writes: the tail that carries a match past its identifying part.
RAW = "[^\\s\"'`<>]"
BASE64 = "[A-Za-z0-9+/_-]"
HEX = "[0-9A-Fa-f]"
PERCENT = "[A-Za-z0-9%._~+-]"


def forms(value: str) -> list[tuple[str, str, bool]]:
    """Each form `value` takes: (its text, its alphabet, whether case is ignored)."""
    found = {(value, RAW, False)}
    found |= {(middle, BASE64, False) for middle in base64_middles(value.encode()) if len(middle) >= SHORTEST}
    found.add((value.encode().hex(), HEX, True))
    found |= {(form, PERCENT, True) for form in url_forms(value)}
    return sorted(found)


def entries(values: Iterable[str]) -> tuple[Secret, ...]:
    """One table entry per form of each value long enough to be told from ordinary text."""
    made = []
    for text, alphabet, ci in sorted({form for value in values if len(value) >= SHORTEST for form in forms(value)}):
        head = text[:IDENTIFYING]
        tail = Tail(cls(alphabet)) if len(text) > IDENTIFYING else None
        made.append(Secret(KIND, lit(head, ci=ci), tail=tail))
    return tuple(made)


_remembered: set[str] = set()  # of every agent of the process: one table serves them all, and their logs


def remember_secrets(values: Iterable[str]) -> None:
    """From now on, every redaction in this process (answers, data, logs, the audit) also catches `values`."""
    _remembered.update(values)
    use(Rules(SECRETS + entries(_remembered)))


def forget_secrets() -> None:
    """Back to the shapes' table alone (for tests)."""
    _remembered.clear()
    use(Rules(SECRETS))
