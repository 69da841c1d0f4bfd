"""Text as the injection phrase table sees it, folded piece by piece so that it works on a stream.

Each character is folded to its compatibility form (NFKD: full-width letters and ligatures become ASCII), loses
its accents, is case-folded, and look-alike letters from other scripts become the Latin ones; whitespace
collapses to one space; invisible characters (zero-width, soft hyphen, direction marks) vanish. Characters
that hide text are findings of their own: Unicode tag characters (U+E0000 to U+E007F, invisible look-alikes of
ASCII) and bidirectional overrides. The ASCII that tag characters spell is kept, between spaces, so the phrases
are looked for in it too.
"""

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad\u200e\u200f\u2061\u2062\u2063\u2064\u180e")
BIDI = frozenset(chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
TAG_FIRST, TAG_LAST = 0xE0000, 0xE007F
# Cyrillic and Greek letters drawn like Latin ones, as used to dodge filters ("ign\u043ere"), and curly quotes.
CONFUSABLES = str.maketrans("аеорсухіјѕԁɡοαντικ’‘", "aeopcyxijsdgoavtik''")  # noqa: RUF001
EXCERPT = 80
_PIECES = re.compile(r"[\x00-\x7f]+|[^\x00-\x7f]+")
_ASCII_SPACES = str.maketrans({c: " " for c in map(chr, range(128)) if c.isspace()})
_KEPT = re.compile(r"^ |[^ ]+ ?")  # words and the first space after each: more spaces collapse
_KEPT_AFTER_SPACE = re.compile(r"[^ ]+ ?")  # the same, when the text so far ends with a space


@dataclass(frozen=True, slots=True)
class InjectionFinding:
    """Injection-shaped text: the phrase's id, its offset in the original text, and what it read as."""

    phrase: str
    offset: int
    excerpt: str
    tool_call: str = ""  # the tool call whose result held it; "" for the answer


@lru_cache(maxsize=4096)
def fold(char: str) -> str:
    """One visible character as the phrase table sees it (possibly several characters, or none)."""
    if char.isspace():
        return " "
    decomposed = unicodedata.normalize("NFKD", char)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().translate(CONFUSABLES)


@dataclass
class _Run:
    kind: str
    offset: int
    spelled: list[str] = field(default_factory=list)


class Normalizer:
    """Folds a stream of text; `feed()` returns the folded text with, for each character, its source offset."""

    def __init__(self) -> None:
        self._offset = 0  # offset of the next character fed
        self._space = True  # the folded text ends with a space (or is empty)
        self._run: _Run | None = None  # an open run of hidden characters
        self._text: list[str] = []  # what the current `feed()` call returns
        self._origins: list[int] = []
        self._found: list[InjectionFinding] = []

    def feed(self, delta: str) -> tuple[str, list[int], list[InjectionFinding]]:
        """Folded text, the source offset of each of its characters, and hidden runs that ended."""
        for piece in _PIECES.finditer(delta):
            if piece.group().isascii():
                self._ascii(piece.group(), self._offset + piece.start())
            else:
                self._unicode(piece.group(), self._offset + piece.start())
        self._offset += len(delta)
        result = "".join(self._text), self._origins, self._found
        self._text, self._origins, self._found = [], [], []
        return result

    def flush(self) -> list[InjectionFinding]:
        """Ends the text: a hidden run still open is reported."""
        if self._run:
            self._close(self._offset)
        found, self._text, self._origins, self._found = self._found, [], [], []
        return found

    def _ascii(self, piece: str, first: int) -> None:
        """The common case, at C speed: nothing to fold but case and spaces."""
        if self._run:
            self._close(first)
        spaced = piece.translate(_ASCII_SPACES).lower()
        kept = [(m.start(), m.end()) for m in (_KEPT_AFTER_SPACE if self._space else _KEPT).finditer(spaced)]
        for start, end in kept:
            self._text.append(spaced[start:end])
            self._origins.extend(range(first + start, first + end))
        if kept:
            self._space = spaced[kept[-1][1] - 1] == " "

    def _unicode(self, piece: str, first: int) -> None:
        for at, char in enumerate(piece, first):
            kind = _hidden_kind(char)
            if self._run and self._run.kind != kind:
                self._close(at)
            if kind is None:
                if char not in INVISIBLE:
                    self._emit(fold(char), at)
                continue
            if self._run is None:
                self._emit(" ", at)  # hidden text is read as words of its own
            run = self._run = self._run or _Run(kind, at)
            if kind == "bidi-control":
                run.spelled.append(f"U+{ord(char):04X} ")
            elif 0x20 <= ord(char) - TAG_FIRST < 0x7F:
                run.spelled.append(chr(ord(char) - TAG_FIRST))
                self._emit(fold(run.spelled[-1]), at)

    def _close(self, at: int) -> None:
        assert self._run is not None
        run, self._run = self._run, None
        self._emit(" ", at)
        self._found.append(InjectionFinding(run.kind, run.offset, "".join(run.spelled).strip()[:EXCERPT]))

    def _emit(self, folded: str, at: int) -> None:
        for char in folded:
            if char == " " and self._space:
                continue
            self._space = char == " "
            self._text.append(char)
            self._origins.append(at)


def _hidden_kind(char: str) -> str | None:
    if TAG_FIRST <= ord(char) <= TAG_LAST:
        return "tag-characters"
    return "bidi-control" if char in BIDI else None
