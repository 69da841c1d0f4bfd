"""Glob patterns for paths, commands and tool names, matched without regular expressions.

Paths: `*` and `?` stay inside one folder, `**` (a whole segment) crosses folders, `[abc]`, `[a-z]`,
`[!a]` are character classes, `\\` escapes. A pattern starting with `/` is absolute, one starting with `**/`
matches anywhere, one starting with `~/` or `~user/` is under that home, any other is relative to the
workspace. `.` and `..` are refused: write the path.
Commands and tool names: `*` matches anything (spaces too), `\\` escapes, nothing else is special;
a pattern ending in ` *` also matches the command alone (`ls *` matches `ls`).
The matcher backtracks only to the last `*`, so it is O(len(pattern) * len(text)): no catastrophic cases.
"""

from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from a2a_wrapper.shield.classes import loose

MAX_PATTERN = 1024
_STAR = object()
_GLOBSTAR = object()


@dataclass(frozen=True, slots=True)
class _Class:
    ranges: tuple[tuple[str, str], ...]
    negated: bool

    def __contains__(self, char: str) -> bool:
        return any(low <= char <= high for low, high in self.ranges) != self.negated


_Token = str | _Class | object  # a literal character, `?` (None), a class, or _STAR
_ANY = None


class GlobError(ValueError):
    pass


def check_path_glob(pattern: str) -> str:
    _check_text(pattern)
    segments = pattern.strip("/").split("/") if pattern != "/" else []
    for segment in segments:
        if segment in ("", ".", ".."):
            raise GlobError("empty, `.` and `..` segments are not allowed; write the path they mean")
        if "**" in segment and segment != "**":
            raise GlobError("`**` must be a whole segment, as in `src/**/*.py`")
        _segment_tokens(segment)
    if pattern.endswith("/") and pattern != "/":
        raise GlobError("no trailing `/`; write `dir/**` for everything under `dir`")
    return pattern


def check_command_glob(pattern: str) -> str:
    _check_text(pattern)
    if "\n" in pattern or not pattern.strip():
        raise GlobError("a command pattern is one non-empty line")
    _command_tokens(pattern)
    return pattern


def _check_text(pattern: str) -> None:
    if not pattern or "\0" in pattern or len(pattern) > MAX_PATTERN:
        raise GlobError(f"a pattern is 1 to {MAX_PATTERN} characters, without NUL")


def escape(text: str) -> str:
    """A pattern matching exactly `text`."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def path_matches(pattern: str, path: str, root: str, folded: bool = False) -> bool:
    """Whether the absolute real `path` matches `pattern` (relative patterns under `root`)."""
    if folded:
        pattern, path, root = loose(pattern), loose(path), loose(root)
    return _match_segments(_path_tokens(pattern, root), [s for s in path.split("/") if s])


def command_matches(pattern: str, text: str, folded: bool = False) -> bool:
    if folded:
        pattern, text = loose(pattern), loose(text)
    if pattern.endswith(" *") and not pattern.endswith("\\ *") and _match(_command_tokens(pattern[:-2]), text):
        return True
    return _match(_command_tokens(pattern), text)


@lru_cache(maxsize=4096)
def _path_tokens(pattern: str, root: str) -> tuple[object, ...]:
    anchored = pattern.startswith(("/", "**/")) or pattern == "**"
    base = () if anchored else tuple(tuple(segment) for segment in root.split("/") if segment)  # literally
    return (*base, *(_GLOBSTAR if s == "**" else _segment_tokens(s) for s in pattern.split("/") if s))


@lru_cache(maxsize=4096)
def _segment_tokens(segment: str) -> tuple[_Token, ...]:
    tokens: list[_Token] = []
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "\\":
            if i + 1 >= len(segment):
                raise GlobError("a pattern may not end with `\\`")
            tokens.append(segment[i + 1])
            i += 2
            continue
        if c == "[":
            char_class, i = _char_class(segment, i)
            tokens.append(char_class)
            continue
        tokens.append(_STAR if c == "*" else _ANY if c == "?" else c)
        i += 1
    return tuple(tokens)


def _char_class(segment: str, start: int) -> tuple[_Class, int]:
    i = start + 1
    negated = segment[i : i + 1] in ("!", "^")
    i += negated
    ranges: list[tuple[str, str]] = []
    while i < len(segment) and (segment[i] != "]" or not ranges):
        low = segment[i]
        if segment[i + 1 : i + 2] == "-" and segment[i + 2 : i + 3] not in ("", "]"):
            ranges.append((low, segment[i + 2]))
            i += 3
        else:
            ranges.append((low, low))
            i += 1
    if i >= len(segment):
        raise GlobError(f"`[` at {start} is never closed")
    return _Class(tuple(ranges), negated), i + 1


@lru_cache(maxsize=4096)
def _command_tokens(pattern: str) -> tuple[_Token, ...]:
    tokens: list[_Token] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            if i + 1 >= len(pattern):
                raise GlobError("a pattern may not end with `\\`")
            tokens.append(pattern[i + 1])
            i += 2
        else:
            tokens.append(_STAR if pattern[i] == "*" else pattern[i])
            i += 1
    return tuple(tokens)


def _match(tokens: tuple[_Token, ...], text: str) -> bool:
    """Wildcard match, backtracking only to the last `*`."""
    p = t = 0
    star, mark = -1, 0
    while t < len(text):
        if p < len(tokens) and tokens[p] is _STAR:
            star, mark = p, t
            p += 1
        elif p < len(tokens) and _one(tokens[p], text[t]):
            p += 1
            t += 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            t = mark
        else:
            return False
    return all(token is _STAR for token in tokens[p:])


def _one(token: _Token, char: str) -> bool:
    if token is _ANY:
        return True
    if isinstance(token, _Class):
        return char in token
    return token == char


def _match_segments(pattern: tuple[object, ...], segments: list[str]) -> bool:
    reachable = {0}  # how many path segments the pattern so far can have consumed
    for token in pattern:
        if token is _GLOBSTAR:
            reachable = set(range(min(reachable), len(segments) + 1))
        else:
            segment = cast(tuple[_Token, ...], token)
            reachable = {i + 1 for i in reachable if i < len(segments) and _match(segment, segments[i])}
        if not reachable:
            return False
    return len(segments) in reachable
