"""One turn's outbound checks, as the reporter applies them to what it sends over A2A."""

import dataclasses
from typing import Any

from .injection import GuardVerdict, InjectionFinding, InjectionScanner, Mode, scan
from .secrets import redact, redact_value
from .settings import GuardSettings
from .stream import StreamRedactor


class TurnGuard:
    """The answer's deltas pass the redactor and the injection scanner; data and sentences are redacted whole.

    Tool output is scanned too: text a tool brought in (a file, a web page) is where an injection comes from,
    whether or not the answer repeats it. Its findings count for the whole turn. In `block` mode the answer is
    held until the turn ends: text already sent could not be taken back.
    """

    def __init__(self, settings: GuardSettings) -> None:
        self._settings = settings
        self._redactor = StreamRedactor() if settings.redact else None
        self._scanner = InjectionScanner() if settings.injection != "off" else None
        self._findings: list[InjectionFinding] = []

    @property
    def holds_answer(self) -> bool:
        return self._settings.injection == "block"

    @property
    def _mode(self) -> Mode:  # asked only while scanning, so never "off"
        return "block" if self.holds_answer else "warn"

    def text(self, delta: str) -> str:
        """What of the delta may be sent now (a possible secret's start is held back)."""
        if self._scanner is not None:
            self._findings += self._scanner.feed(delta)
        return self._redactor.feed(delta) if self._redactor is not None else delta

    def tool_output(self, call_id: str, output: str) -> GuardVerdict:
        """The verdict on one tool result's output; in `block` mode a finding means it must not be sent."""
        if self._scanner is None:
            return GuardVerdict()
        found = [dataclasses.replace(finding, tool_call=call_id) for finding in scan(output)]
        self._findings += found
        return GuardVerdict.judge(found, self._mode)

    def finish(self) -> tuple[str, GuardVerdict]:
        """The held-back tail of the answer, and the verdict on the whole of it."""
        tail = self._redactor.flush() if self._redactor is not None else ""
        if self._scanner is None:
            return tail, GuardVerdict()
        self._findings += self._scanner.flush()
        return tail, GuardVerdict.judge(self._findings, self._mode)

    def value(self, value: Any) -> Any:
        return redact_value(value) if self._settings.redact else value

    def sentence(self, text: str) -> str:
        return redact(text)[0] if self._settings.redact else text
