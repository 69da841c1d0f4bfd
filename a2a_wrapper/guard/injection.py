"""Injection-shaped text in what the backend sends back: a small phrase table, matched on folded text.

The phrases are matched after `normalize` has folded the text (so full-width letters, accents, look-alike
letters, zero-width characters, odd spacing and text spelled in invisible tag characters all read alike).
Phrases need their object — "ignore the previous test failure" is not "ignore previous instructions" — to keep
false alarms low. What to do about a finding is the caller's policy: `warn` flags, `block` stops.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from .grammar import lit, triggers
from .normalize import EXCERPT, InjectionFinding, Normalizer

__all__ = ["MAX_PHRASE", "PHRASES", "GuardVerdict", "InjectionFinding", "InjectionScanner", "Mode", "scan"]

Mode = Literal["warn", "block"]

_EARLIER = r"(?:previous|prior|preceding|above|earlier|former|original|initial|system|developer|safety)"
_ORDERS = r"(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guidance|context|messages?|constraints)"
_PERSONA = r"(?:ai|assistant|model|chatbot|bot|persona|character|dan|hacker|unrestricted|unfiltered|uncensored)"

# (id, first words, what must follow them) over folded text: lower case, single spaces. An id may have several
# rows. Bounded quantifiers only: a match spans at most MAX_PHRASE folded characters, which is what a stream keeps.
PHRASES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("ignore-instructions", ("ignore", "disregard", "forget", "override", "bypass", "do not follow", "don't follow",
                             "stop following"),
     rf" (?:(?:all|any|every|of|the|your|my|these|those) ){{0,3}}{_EARLIER} {_ORDERS}\b"),
    ("ignore-everything", ("ignore", "disregard", "forget"),
     r" (?:everything|anything|all|whatever) (?:(?:that )?you (?:were|have been|'ve been) told"
     r"|(?:written |said )?(?:above|previously|so far|until now|before this))\b"),
    ("role-override", ("you are now", "you are no longer"),
     rf" (?:an? |the |my )?(?:[a-z]{{1,20}} ){{0,2}}?{_PERSONA}\b"),
    ("role-override", ("you are no longer",), r" (?:bound|restricted|limited) by\b"),
    ("act-as", ("act as", "behave as", "respond as", "answer as"),
     r" (?:if you (?:are|were) )?(?:an? )?"
     r"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|malicious|rogue|dan)\b"),
    ("act-as", ("pretend",),
     r" (?:that )?you (?:are|have) (?:no|not bound by any) (?:restrictions|rules|guidelines|limits|filters)\b"),
    ("new-instructions", ("new", "updated", "revised", "real", "actual", "true", "hidden", "secret"),
     r" (?:system )?instructions? ?:"),
    ("system-prompt", ("system prompt",), r" ?:"),
    ("system-prompt", ("system", "developer"), r" (?:message|override) ?:"),
    ("reveal-prompt", ("reveal", "show", "print", "output", "repeat", "display", "dump", "leak", "tell me", "give me",
                       "disclose"),
     r" (?:me )?(?:your|the) (?:(?:full|entire|complete|exact|original|hidden|initial|secret) ){0,2}"
     r"(?:system (?:prompt|message|instructions)|(?:initial|hidden|original|secret) (?:prompt|instructions))\b"),
    ("developer-mode", ("developer", "god", "dan", "jailbreak", "unrestricted"),
     r" mode (?:is )?(?:now )?(?:enabled|activated|unlocked)\b"),
    ("developer-mode", ("enter", "enable", "activate", "switch to", "unlock"),
     r" (?:the )?(?:god|dan|jailbreak|unrestricted) mode\b"),
    ("jailbreak", ("jailbreak", "jailbroken"), r" (?:mode|prompt|enabled|activated|successful)\b"),
    ("jailbreak", ("do anything now",), r"\b"),
    # chat-template control tokens have no business in an answer: they try to open a new (system) turn
    ("role-tag", ("<|im_start|>", "<|im_end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|endoftext|>",
                  "<|begin_of_text|>", "<|start_header_id|>", "<|eot_id|>", "<system>", "</system>", "[inst]",
                  "[/inst]", "<<sys>>", "<</sys>>", "<start_of_turn>", "<end_of_turn>"), ""),
    ("exfiltrate", ("send", "post", "upload", "exfiltrate", "forward", "email", "transmit"),
     r" (?:(?:all|the|your|any|these) ){0,2}(?:api keys?|credentials|secrets|passwords|private keys?|access tokens"
     r"|env(?:ironment)? variables|\.env(?: file)?|ssh keys?) to (?:https?://|[\w.+-]{1,64}@"
     r"|this (?:url|address|endpoint|server|webhook))"),
)  # fmt: skip
MAX_PHRASE = 160  # folded characters; no row above matches more
_WINDOW = MAX_PHRASE + 40
# Rows are tried only where one of their first words stands: `re` finds those at C speed.
_TRIGGER = re.compile(triggers([lit(*words) for _, words, _ in PHRASES], whole=True))


def _rows_by_first_char() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    rows: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for phrase, words, rest in PHRASES:
        rx = re.compile(("(?<!\\w)" if words[0][0].isalnum() else "") + lit(*words).rx + rest)
        for first in {w[0] for w in words}:
            rows.setdefault(first, []).append((phrase, rx))
    return rows


_ROWS = _rows_by_first_char()


class InjectionScanner:
    """Scans a stream of text deltas; each finding is reported once, phrases split across deltas included."""

    def __init__(self) -> None:
        self._normalizer = Normalizer()
        self._text = ""  # the folded text's last characters
        self._origins: list[int] = []  # the source offset of each of them
        self._base = 0  # the folded position of `_text[0]`
        self._next = 0  # the folded position to search from

    def feed(self, delta: str) -> list[InjectionFinding]:
        """Takes the next delta; returns the findings it completed (a phrase right at the end waits one more)."""
        folded, origins, found = self._normalizer.feed(delta)
        start = max(len(self._text) - MAX_PHRASE, 0)  # anything earlier was decided by the last feed
        self._text += folded
        self._origins += origins
        found += self._match(start, final=False)
        cut = max(len(self._text) - _WINDOW, 0)
        self._text, self._origins, self._base = self._text[cut:], self._origins[cut:], self._base + cut
        return sorted(found, key=_order)

    def flush(self) -> list[InjectionFinding]:
        """Ends the text; returns the findings still open."""
        found = self._normalizer.flush()
        found += self._match(max(len(self._text) - MAX_PHRASE, 0), final=True)
        return sorted(found, key=_order)

    def _match(self, start: int, final: bool) -> list[InjectionFinding]:
        found: list[InjectionFinding] = []
        text = self._text
        pos = max(start, self._next - self._base)
        while hit := _TRIGGER.search(text, pos):
            pos = hit.start() + 1
            for phrase, rx in _ROWS[text[hit.start()]]:
                if match := rx.match(text, hit.start()):
                    if match.end() == len(text) and not final:
                        return found  # `\b` at the end may not hold once more text comes
                    found.append(InjectionFinding(phrase, self._origins[match.start()], match.group()[:EXCERPT]))
                    pos = match.end()
                    self._next = self._base + pos
                    break
        return found


def _order(finding: InjectionFinding) -> tuple[int, str]:
    return finding.offset, finding.phrase


def scan(text: str) -> list[InjectionFinding]:
    """The injection findings in a whole text, by offset."""
    scanner = InjectionScanner()
    return sorted(scanner.feed(text) + scanner.flush(), key=_order)


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """What the guard concluded about a message: its injection findings, and whether it is blocked."""

    findings: tuple[InjectionFinding, ...] = ()
    blocked: bool = False

    @classmethod
    def judge(cls, findings: Iterable[InjectionFinding], mode: Mode) -> "GuardVerdict":
        """`block` blocks a message with any finding; `warn` only reports them."""
        found = tuple(findings)
        return cls(found, blocked=mode == "block" and bool(found))

    def metadata(self) -> dict[str, Any]:
        """The verdict as message metadata; empty when there is nothing to say."""
        if not self.findings:
            return {}
        found = [_described(f) for f in self.findings]
        return {"injection": found, "blocked": self.blocked}


def _described(finding: InjectionFinding) -> dict[str, Any]:
    described: dict[str, Any] = {"phrase": finding.phrase, "offset": finding.offset, "excerpt": finding.excerpt}
    return (described | {"toolCall": finding.tool_call}) if finding.tool_call else described
