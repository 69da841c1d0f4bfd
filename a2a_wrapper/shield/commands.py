"""Compound commands taken apart: every command the shell would run, and every file a redirection opens.

`a && b`, `a || b`, `a; b`, `a | b`, `a & b`, newlines, `( … )`, `{ …; }`, `if/while/for` bodies,
`$( … )`, backticks and `<( … )` give one part per command; so does a `for NAME in …` header, which
sets a variable (`for PATH in .` would change what runs). Wrappers give a part for the whole command
*and* one for the command they run: `bash -c '…'`, `sh -c`, `su -c`, `eval`, `watch`, `env X=1 cmd`,
`sudo cmd`, `nohup`, `timeout`, `nice`, `xargs cmd` (whose arguments come from stdin, so unknown),
`find -exec cmd ;`. A rule must allow every part. Interpreters' code (`python -c`, `node -e`) is opaque.
A part is *computed* when a word of its command, or of a redirection (a here-string too), is computed at run
time. Builtins that evaluate arithmetic on their arguments (`let`, `declare -i`, `read 'a[$(…)]'`) are refused.
"""

import re
from dataclasses import dataclass, replace
from itertools import pairwise

from a2a_wrapper.shield.classes import command_name
from a2a_wrapper.shield.shell import MAX_DEPTH, Op, Token, Unparseable, Word, lex

_REDIRECTS = frozenset({"<", ">", ">>", ">|", "<>", "&>", "&>>", ">&", "<&", "<<<"})
_JOINERS = frozenset({"&&", "||", "|", "|&"})
_KEYWORDS = frozenset({"!", "{", "}", "then", "else", "elif", "do", "done", "fi", "if", "while", "until", "time"})
_REFUSED = frozenset({"case", "esac", "select", "function", "coproc", "[[", "]]"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_FD_TARGET = re.compile(r"[0-9]+-?|-")
_DECLARERS = frozenset({"declare", "typeset", "local", "readonly", "export"})
# builtins that take variable names: a name `a[…]` evaluates its subscript as arithmetic, which can run `$(…)`
_NAME_TAKERS = _DECLARERS | {"read", "unset", "mapfile", "readarray", "getopts", "wait"}
_V_NAME_TAKERS = frozenset({"printf", "test", "["})  # only the name after `-v`
_SUBSCRIPTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
# wrapper -> (its options that take a value, positional words before the command it runs)
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "-C", "--unset", "--chdir"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "flock": (frozenset({"-w", "-E", "--timeout", "--conflict-exit-code"}), 1),
    "chrt": (frozenset(), 1),
    "taskset": (frozenset(), 1),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), 0),
    "strace": (frozenset({"-e", "-o", "-p", "-s", "-u", "-E"}), 0),
    "ltrace": (frozenset({"-e", "-o", "-p", "-s", "-u"}), 0),
    "xargs": (frozenset({"-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a", "--arg-file", "--delimiter"}), 0),
    "watch": (frozenset({"-n", "-d", "--interval"}), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "busybox": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
}


@dataclass(frozen=True, slots=True)
class Part:
    """One command the shell would run, or (with `redirect`) the file one redirection opens."""

    words: tuple[Word, ...]
    redirect: str | None = None
    wrapper: bool = False  # runs another command, which is a part of its own
    computed: bool = False  # a word of it (or of its command's redirections) is known only when the shell runs

    @property
    def text(self) -> str:
        joined = " ".join(word.text for word in self.words)
        return f"{self.redirect} {joined}" if self.redirect else joined

    @property
    def command(self) -> tuple[Word, ...]:
        """The words from the command name on (leading NAME=value assignments left out)."""
        start = next((i for i, word in enumerate(self.words) if not word.assignment), len(self.words))
        return self.words[start:]


def split(command: str) -> list[Part]:
    """Every part of a command line, in order; raises Unparseable for what cannot be taken apart."""
    return _parts(lex(command), 0)


def _parts(tokens: list[Token], depth: int) -> list[Part]:
    _check_depth(depth)
    parts: list[Part] = []
    for words, redirects in _simple_commands(tokens):
        for word in (*words, *(target for _, target in redirects)):
            for inner in word.inner:
                parts += _parts(list(inner), depth + 1)
        parts += [Part((target,), op, computed=target.dynamic) for op, target in redirects if _opens_file(op, target)]
        computed = any(word.dynamic for word in (*words, *(target for _, target in redirects)))
        parts += [replace(part, computed=computed) for part in _command_parts(words, depth)]
    return parts


def _simple_commands(tokens: list[Token]) -> list[tuple[list[Word], list[tuple[str, Word]]]]:
    """Tokens grouped into simple commands, checked the way bash checks them."""
    commands: list[tuple[list[Word], list[tuple[str, Word]]]] = []
    words: list[Word] = []
    redirects: list[tuple[str, Word]] = []
    have, pending = False, None  # something since the last separator; a `&&`-like still waiting
    stream = iter(tokens)
    for token in stream:
        if isinstance(token, Word) or token.text in _REDIRECTS:
            if isinstance(token, Op):
                target = next(stream, None)
                if not isinstance(target, Word):
                    raise Unparseable(f"`{token.text}` has no file after it")
                redirects.append((token.text, target))
            else:
                words.append(token)
            have, pending = True, None
            continue
        if token.text == "(" and (words or redirects):
            raise Unparseable("a `(` in the middle of a command is not checked (function definitions, extglob)")
        if words or redirects:
            commands.append((words, redirects))
            words, redirects = [], []
        if token.text in (";", "&") or token.text in _JOINERS:
            if not have or pending:
                raise Unparseable(f"`{token.text}` has no command before it")
            have, pending = False, (token.text if token.text in _JOINERS else None)
        elif token.text == "(":
            have, pending = False, None
        elif token.text == ")":
            have = True
        else:  # a newline ends a command; a `&&` before it still waits for the next line
            have = False
    if pending:
        raise Unparseable(f"`{pending}` has no command after it")
    if words or redirects:
        commands.append((words, redirects))
    return commands


def _opens_file(op: str, target: Word) -> bool:
    if op == "<<<" or (op in (">&", "<&") and _FD_TARGET.fullmatch(target.text)):
        return False  # a here-string is data; `2>&1` duplicates a descriptor
    return target.dynamic or target.text not in _HARMLESS_TARGETS


def _check_depth(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise Unparseable(f"it nests commands deeper than {MAX_DEPTH} levels")


def _command_parts(words: list[Word], depth: int) -> list[Part]:
    _check_depth(depth)
    while words and not words[0].quoted and words[0].text in _KEYWORDS:
        words = words[2:] if words[0].text == "time" and len(words) > 1 and words[1].text == "-p" else words[1:]
    part = Part(tuple(words))
    if not part.command:
        return [part] if words else []
    name = part.command[0]
    if name.dynamic or name.glob:
        raise Unparseable(f"the command name `{name.text}` is known only when the shell runs")
    if not name.quoted and name.text in _REFUSED:
        raise Unparseable(f"`{name.text}` is not checked; write plain commands")
    _check_arithmetic(part.command)
    inner = _inner(list(part.command), depth)
    return [Part(part.words, wrapper=inner is not None), *(inner or [])]


def _check_arithmetic(words: tuple[Word, ...]) -> None:
    """Refuse what makes bash evaluate a word as arithmetic: `let`, integer and nameref attributes, subscripts."""
    name, args = command_name(words[0].text), [word.text for word in words[1:]]
    if name == "let":
        raise Unparseable("`let` evaluates arithmetic, which is not checked")
    if name in _DECLARERS and any(a.startswith(("-", "+")) and set(a[1:]) & set("in") for a in args):
        raise Unparseable(f"`{name} -i` and `{name} -n` make later values arithmetic or names; not checked")
    names = args if name in _NAME_TAKERS else [b for a, b in pairwise(args) if a == "-v"]
    if name in _NAME_TAKERS | _V_NAME_TAKERS and any(_SUBSCRIPTED.match(n) for n in names):
        raise Unparseable(f"a subscripted name given to `{name}` is evaluated as arithmetic, which is not checked")


def _inner(words: list[Word], depth: int) -> list[Part] | None:
    """The parts of the command a wrapper runs; None when this command is no wrapper."""
    name = command_name(words[0].text)
    if name in _SHELLS or name == "su":
        script = _dash_c(words, su=name == "su")
        return None if script is None else _script_parts([script], depth)
    if name == "eval":
        return _script_parts(words[1:], depth)
    if name == "find":
        return _find_exec(words, depth)
    if name not in WRAPPERS:
        return None
    takes_value, positionals = WRAPPERS[name]
    rest = words[_command_start(words, takes_value) + positionals :]
    if name == "env":
        if any(w.text in ("-S", "--split-string") or w.text.startswith("--split-string=") for w in words):
            raise Unparseable("`env -S` is not checked")
        rest = rest[next((i for i, w in enumerate(rest) if not w.assignment), len(rest)) :]
    if name == "watch":
        return _script_parts(rest, depth)
    if name == "xargs":  # its arguments come from stdin: a path nobody can know yet
        rest = [*(rest or [Word("echo")]), Word("{stdin}", dynamic=True)]
    return _command_parts(rest, depth + 1) if rest else []


def _command_start(words: list[Word], takes_value: frozenset[str]) -> int:
    i = 1
    while i < len(words) and words[i].text.startswith("-") and words[i].text != "-":
        if words[i].text == "--":
            return i + 1
        i += 2 if words[i].text in takes_value else 1
    return i


def _dash_c(words: list[Word], su: bool) -> Word | None:
    """The script of `bash -c SCRIPT` (`-lc`, `-ec` … too) or `su -c SCRIPT`; None without `-c`."""
    for i, word in enumerate(words[1:], start=1):
        text = word.text
        if text.startswith("--command=") and su:
            return Word(text.split("=", 1)[1], dynamic=word.dynamic)
        short_c = text.startswith("-") and "c" in text[1:] and "-" not in text[1:]  # -c, -lc, -ec …
        if text in ("-c", "--command") if su else short_c:
            following = [w for w in words[i + 1 :] if su or not w.text.startswith("-")]
            if not following:
                raise Unparseable(f"`{words[0].text} -c` has no script")
            return following[0]
    return None


def _script_parts(words: list[Word], depth: int) -> list[Part]:
    """A script given as words (`bash -c`, `eval`, `watch`): lexed and taken apart like the command line."""
    if any(word.dynamic for word in words):
        raise Unparseable("a script built when the shell runs is not checked")
    return _parts(lex(" ".join(word.text for word in words), depth + 1), depth + 1)


def _find_exec(words: list[Word], depth: int) -> list[Part] | None:
    parts: list[Part] = []
    i = 1
    while i < len(words):
        if words[i].text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(words)) if words[j].text in (";", "+")), len(words))
            found = [Word("{}", dynamic=True) if w.text == "{}" else w for w in words[i + 1 : end]]
            if not found:
                raise Unparseable(f"`find {words[i].text}` has no command")
            parts += _command_parts(found, depth + 1)
            i = end
        i += 1
    return parts or None
