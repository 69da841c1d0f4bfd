"""Regex building blocks that also know their own prefixes.

A streaming redactor must hold back exactly the text that could still grow into a secret, and `re` cannot
answer "could a match starting here change if more text came?". So each secret pattern is written once from
these few nodes, and every node renders two regexes:

- `rx`: what the node matches;
- `prefix`: matches at a position exactly when some way of matching the node there runs into the end of the
  text (`\\Z`) — the only case in which more text could change the outcome.

Runs are possessive (no backtracking) unless asked otherwise, and every count is bounded, so matching is linear
and `reach` (the most characters a node examines) bounds how much text a stream ever holds back. `starts` are
the words a match begins with; `triggers()` turns them into a regex that `re` searches at C speed, because a
pattern whose alternatives all begin with a plain character lets `re` skip every other character.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

END = r"\Z"
NEVER = r"(?!)"
BEHIND = 5  # the most characters a look-behind examines: a stream keeps that many settled characters before the rest


@dataclass(frozen=True, slots=True)
class Start:
    word: str
    ci: bool  # ignore case
    then: str = ""  # the regex that follows the word in the node


@dataclass(frozen=True, slots=True)
class Node:
    rx: str
    prefix: str
    width: int  # most characters consumed
    reach: int  # most characters examined, counting look-ahead
    starts: tuple[Start, ...] = ()  # every match begins with one of these; () if unknown


EMPTY = Node("", NEVER, 0, 0)


def _cased(text: str, ci: bool = False) -> str:
    """`text` as a regex; ignoring case by classes like `[Tt]`, which `re` skips faster than `(?i:...)`."""
    return "".join(f"[{c.lower()}{c.upper()}]" if ci and c.lower() != c.upper() else re.escape(c) for c in text)


def _trie(words: Iterable[str], ci: bool = False) -> str:
    """A regex for any non-empty prefix of `words`, nested so that backtracking stays shallow."""
    children: dict[str, list[str]] = {}
    for word in words:
        if word:
            children.setdefault(word[0], []).append(word[1:])
    branches = (_cased(c, ci) + (f"{_trie(rest, ci)}?" if any(rest) else "") for c, rest in children.items())
    return "(?:" + "|".join(branches) + ")"


def _then(starts: tuple[Start, ...], rx: str) -> tuple[Start, ...]:
    return tuple(Start(s.word, s.ci, s.then + rx) for s in starts)


def lit(*words: str, ci: bool = False) -> Node:
    """One of `words` (longest first); `ci` ignores case."""
    group = "(?i:{})" if ci else "(?:{})"
    rx = group.format("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))
    width = max(map(len, words))
    return Node(rx, group.format(_trie(words) + "?") + END, width, width, tuple(Start(w, ci) for w in words))


def cls(chars: str) -> Node:
    """One character of a class such as `[A-Z0-9]`."""
    return Node(chars, END, 1, 1)


def run(unit: Node | str, low: int, high: int, *, backtrack: bool = False) -> Node:
    """`low` to `high` repeats of `unit` (a node or a character class); possessive unless `backtrack`."""
    node = cls(unit) if isinstance(unit, str) else unit
    mode = "" if backtrack else "+"
    rx = f"(?:{node.rx}){{{low},{high}}}{mode}"
    prefix = f"(?:{node.rx}){{0,{high}}}{mode}{node.prefix}"
    starts = _then(node.starts, f"(?:{node.rx}){{{low - 1},{high - 1}}}{mode}") if low else ()
    return Node(rx, prefix, high * node.width, high * node.width + node.reach, starts)


def seq(*nodes: Node) -> Node:
    """The nodes one after another."""
    parts = [n for n in nodes if n is not EMPTY]
    if not parts:
        return EMPTY
    prefix, width, reach, starts = parts[-1].prefix, 0, 0, None
    for node in reversed(parts[:-1]):
        prefix = f"(?:{node.prefix}|{node.rx}{prefix})"
    for i, node in enumerate(parts):
        reach = max(reach, width + node.reach)
        width += node.width
        if starts is None and node.width:  # look-arounds before the first word are left to the full match
            starts = _then(node.starts, "".join(n.rx for n in parts[i + 1 :]))
    return Node("".join(n.rx for n in parts), prefix, width, reach, starts or ())


def alt(*nodes: Node) -> Node:
    """The first of the nodes that matches."""
    rx = "(?:" + "|".join(n.rx for n in nodes) + ")"
    prefix = "(?:" + "|".join(n.prefix for n in nodes) + ")"
    starts = tuple(s for n in nodes for s in n.starts) if all(n.starts for n in nodes) else ()
    return Node(rx, prefix, max(n.width for n in nodes), max(n.reach for n in nodes), starts)


def opt(node: Node) -> Node:
    """The node, or nothing."""
    return Node(f"(?:{node.rx})?", node.prefix, node.width, node.reach)


def ahead(node: Node) -> Node:
    """Succeeds where `node` would match, consuming nothing."""
    return Node(f"(?={node.rx})", f"(?={node.prefix})", 0, node.reach)


def not_ahead(chars: str | Node) -> Node:
    """What follows is not one character of the class (or the node); the end of the text will do."""
    node = cls(chars) if isinstance(chars, str) else chars
    return Node(f"(?!{node.rx})", node.prefix, 0, node.reach)


def not_behind(chars: str) -> Node:
    """The previous character is not in the class; a stream keeps `BEHIND` characters of context for this."""
    return Node(f"(?<!{chars})", NEVER, 0, 0)


def behind(chars: str, count: int = 1) -> Node:
    """The `count` previous characters are all in the class (at most `BEHIND`, the context a stream keeps)."""
    if count > BEHIND:
        raise ValueError(f"a look-behind of {count} characters, past the {BEHIND} a stream keeps")
    return Node(f"(?<={chars}{{{count}}})", NEVER, 0, 0)


def _firsts(start: Start) -> set[str]:
    return {start.word[0].lower(), start.word[0].upper()} if start.ci else {start.word[0]}


def first_chars(node: Node) -> set[str]:
    """The characters a match of `node` can begin with."""
    return {c for s in node.starts for c in _firsts(s)}


def ends_with(*words: str, ci: bool = False) -> Node:
    """The text just before ends with one of `words`: a check on text already consumed."""
    group = "(?i:{})" if ci else "(?:{})"
    return Node(group.format("|".join(f"(?<={re.escape(w)})" for w in words)), NEVER, 0, 0)


def triggers(nodes: Iterable[Node], *, whole: bool) -> str:
    """Where a match of one of `nodes` may begin.

    `whole`: where one matches, bar its leading look-behind. Otherwise: where a start word stands whole or is
    cut by the end of the text (a stream's last `MAX_HOLD` characters).
    """
    options: dict[str, dict[str, dict[str, None]]] = {}  # first character -> rest of word -> what follows
    for node in nodes:
        if not node.starts:
            raise ValueError(f"no start words known for {node.rx!r}")
        for s in node.starts:
            rest, then = _cased(s.word[1:], s.ci), s.then if whole else ""
            for first in _firsts(s):
                options.setdefault(first, {}).setdefault(rest, {})[then] = None
                if not whole and len(s.word) > 1:
                    options[first].setdefault(f"{_trie([s.word[1:]], s.ci)}?{END}", {})[""] = None
    branches = []
    for first, rests in options.items():
        body = "|".join(rest + ("(?:" + "|".join(thens) + ")" if any(thens) else "") for rest, thens in rests.items())
        branches.append(f"{re.escape(first)}(?={body})")
    return "|".join(branches)


class Tail:
    """The open end of a secret: `unit` repeated as far as it goes, then an optional `closer`.

    Tails are unbounded but possessive, so they stay linear; a stream drops their characters as they come
    instead of holding them back.
    """

    def __init__(self, unit: Node, closer: Node | None = None) -> None:
        self.rx = f"(?:{unit.rx})*+" + (f"(?:{closer.rx})?" if closer else "")
        self.units = re.compile(f"(?:{unit.rx})*+")
        self.grows = re.compile(unit.prefix + (f"|{closer.prefix}" if closer else ""))
        self.closer = re.compile(closer.rx) if closer else None
