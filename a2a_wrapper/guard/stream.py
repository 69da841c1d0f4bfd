"""Redaction of a text stream: the joined output equals `redact()` of the joined input, whatever the chunks.

Text is emitted as soon as no secret can start in it. A position is held back only while some table entry,
tried there, runs into the end of the text received so far (`PREFIX`, built from the same table); that is
at most `MAX_HOLD` characters. Once an entry with an open tail is decided, its marker goes out and the tail's
characters are dropped as they arrive, so a long key block is never held in memory.
"""

import dataclasses

from .grammar import BEHIND, Tail
from .secrets import MAX_HOLD, Finding, Rules, active

__all__ = ["MAX_HOLD", "StreamRedactor"]


class StreamRedactor:
    """Redacts text deltas: `feed()` returns what is safe to emit now, `flush()` the rest at the end."""

    def __init__(self, rules: Rules | None = None) -> None:
        self._rules = rules or active()  # fixed for the stream: its hold-back depends on them
        self._buf = ""  # text not yet settled, after at most `BEHIND` settled characters kept for look-behinds
        self._pos = 0  # where the unsettled text starts in `_buf`
        self._offset = 0  # position of `_buf[0]` in the whole stream
        self._tail: Tail | None = None  # inside a secret's open tail: its characters are dropped
        self.findings: list[Finding] = []

    @property
    def pending(self) -> str:
        """The text held back because a secret may start in it."""
        return "" if self._tail else self._buf[self._pos :]

    def feed(self, delta: str) -> str:
        """Takes the next delta; returns the redacted text that can be emitted now."""
        self._buf += delta
        return self._drain(final=False)

    def flush(self) -> str:
        """Ends the stream; returns the redacted rest."""
        text = self._drain(final=True)
        self._offset += len(self._buf)
        self._buf, self._pos = "", 0
        return text

    def _drain(self, final: bool) -> str:
        buf, pos, out, stop, rules = self._buf, self._pos, [], -1, self._rules
        while True:
            if self._tail:
                pos = self._skip_tail(buf, pos, final)
                if self._tail:
                    break
            if stop < pos:  # whether a position is open depends on the text only: look again only past a tail
                stop = len(buf) if final else self._first_open(buf, pos)
            match = rules.find(buf, pos)
            if match is None or match.start() >= stop:
                out.append(buf[pos:stop])
                pos = stop
                break
            # no entry could still change its mind anywhere up to and including this match's start
            index, secret = rules.identify(match)
            replaced, found, end = rules.replace(buf, match, self._offset)
            out += (buf[pos : match.start()], replaced, buf[end : match.end()])
            self.findings += found
            pos = match.end()
            if secret.tail:
                self._tail, pos = secret.tail, match.start(f"t{index}")
        keep = max(pos - BEHIND, 0)
        self._buf, self._pos, self._offset = buf[keep:], pos - keep, self._offset + keep
        return "".join(out)

    def _first_open(self, buf: str, pos: int) -> int:
        """The first position from `pos` where a secret may start, given more text."""
        rules = self._rules
        pos = max(pos, len(buf) - rules.max_hold)  # a secret that can still grow reaches the end from here
        while hit := rules.opening.search(buf, pos):
            if rules.prefix[buf[hit.start()]].match(buf, hit.start()):
                return hit.start()
            pos = hit.start() + 1
        return len(buf)

    def _skip_tail(self, buf: str, pos: int, final: bool) -> int:
        """Drops the current tail's characters; returns where they end, or stops at the end of `buf`."""
        tail = self._tail
        assert tail is not None
        units = tail.units.match(buf, pos)
        end = units.end() if units else pos
        if not final and tail.grows.match(buf, end):
            return end
        closer = tail.closer.match(buf, end) if tail.closer else None
        end = closer.end() if closer else end
        self._tail = None
        self.findings[-1] = dataclasses.replace(self.findings[-1], end=self._offset + end)
        return end
