"""Shell words: a strict lexer for the part of bash that agents write.

It keeps what `shlex` loses: which characters were quoted. It follows bash, and refuses the few constructs
that bash, dash and zsh read differently (quotes inside a quoted `${…}`, zsh's `${(…)…}`). A word is
*dynamic* when the shell computes part of it at run time (`$VAR`, `~`, `{a,b}`, `$'…'`, a substitution);
command substitutions (`$(…)`, backticks, `<(…)`, `>(…)`) are lexed recursively and kept with their word.
Whatever it does not model — heredocs, arithmetic, `${!x}`, array subscripts and `${x:offset}` (all evaluate
arithmetic, which can run commands), `${x@…}` (`@P` runs the `$(…)` in x's value), `case`, unbalanced
quotes, NUL bytes, input past MAX_LENGTH or nested past MAX_DEPTH — raises Unparseable. Backticks inside
"…" unescape `\"` in their body, as bash does; inside `${…}` they do not.
"""

import re
from dataclasses import dataclass

MAX_LENGTH = 16_384
MAX_DEPTH = 8
_OPERATORS = sorted("<<< <<- &>> ;;& << >> <& >& <> >| && || |& ;; ;& &> ; & | ( ) < >".split(), key=len, reverse=True)
_REFUSED_OPERATORS = {"<<": "a heredoc (<<)", "<<-": "a heredoc (<<-)", ";;": "`case`", ";&": "`case`", ";;&": "`case`"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?")
_BRACE_EXPANSION = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_SPECIAL_PARAMETERS = "@*#?$!-0123456789"
_PARAMETER = re.compile(r"#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])")
_LITERAL_OFFSET = re.compile(r"[0-9 ()+-]*(?::[0-9 ()+-]*)?}")
_GLOB = re.compile(r"[*?]|\[.*\]")
_FD = re.compile(r"[0-9]+")


class Unparseable(ValueError):
    """A command the shield cannot take apart; it is denied with this sentence."""


@dataclass(frozen=True, slots=True)
class Word:
    text: str  # quotes removed; what the shell computes at run time is kept as written
    quoted: bool = False
    dynamic: bool = False
    glob: bool = False  # an unquoted * ? or [
    assignment: bool = False  # NAME=value
    inner: tuple[tuple["Word | Op", ...], ...] = ()  # the tokens of each command substitution in the word


@dataclass(frozen=True, slots=True)
class Op:
    text: str


Token = Word | Op


def lex(source: str, depth: int = 0) -> list[Token]:
    if "\0" in source:
        raise Unparseable("it contains a NUL byte")
    if len(source) > MAX_LENGTH:
        raise Unparseable(f"it is longer than {MAX_LENGTH} characters")
    return _Lexer(source, depth).tokens()


class _Lexer:
    def __init__(self, source: str, depth: int, start: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise Unparseable(f"it nests commands deeper than {MAX_DEPTH} levels")
        self.s, self.i, self.depth = source, start, depth

    def tokens(self, nested: bool = False) -> list[Token]:
        """Tokens to the end, or (nested) to the `)` that closes a `$(`, which is consumed."""
        tokens: list[Token] = []
        parens = 0
        while True:
            self._skip_blanks()
            if self.i >= len(self.s):
                if nested or parens:
                    raise Unparseable("a `(` is never closed")
                return tokens
            c = self.s[self.i]
            if c == "#":
                end = self.s.find("\n", self.i)
                self.i = len(self.s) if end < 0 else end
            elif c == "\n":
                tokens.append(Op("\n"))
                self.i += 1
            elif c in "<>" and self.s.startswith("(", self.i + 1):
                tokens.append(self._word())
            elif c in ";&|()<>":
                op = self._operator()
                parens += {"(": 1, ")": -1}.get(op, 0)
                if parens < 0:
                    if nested:
                        return tokens
                    raise Unparseable("a `)` closes nothing")
                tokens.append(Op(op))
            else:
                word = self._word()
                if not (_FD.fullmatch(word.text) and not word.quoted and self.s[self.i : self.i + 1] in ("<", ">")):
                    tokens.append(word)  # (digits right before < or > are a file descriptor number)

    def _skip_blanks(self) -> None:
        while self.i < len(self.s):
            if self.s[self.i] in " \t":
                self.i += 1
            elif self.s.startswith("\\\n", self.i):
                self.i += 2
            else:
                return

    def _operator(self) -> str:
        if self.s.startswith("((", self.i):
            raise Unparseable("arithmetic `((…))` is not checked")
        op = next(o for o in _OPERATORS if self.s.startswith(o, self.i))
        if op in _REFUSED_OPERATORS:
            raise Unparseable(f"{_REFUSED_OPERATORS[op]} is not checked")
        self.i += len(op)
        return op

    def _word(self) -> Word:
        s = self.s
        text: list[str] = []
        inner: list[tuple[Token, ...]] = []
        mask: list[str] = []  # unquoted characters as they are, quoted ones as "_"
        quoted = dynamic = assignment = False
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\n" or (c in ";&|()<>" and not (not mask and c in "<>" and s.startswith("(", self.i + 1))):
                break
            if c in "<>":  # process substitution <(…) >(…)
                start = self.i
                self.i += 2
                inner.append(tuple(self._nested()))
                text.append(s[start : self.i])
                mask.append("_")
                dynamic = True
            elif c == "\\":
                if self.i + 1 >= len(s):
                    raise Unparseable("it ends with a backslash")
                if s[self.i + 1] != "\n":
                    text.append(s[self.i + 1])
                    mask.append("_")
                    quoted = True
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise Unparseable("a single quote is never closed")
                text.append(s[self.i + 1 : end])
                mask.append("_")
                quoted = True
                self.i = end + 1
            elif c == '"':
                dynamic = self._double_quoted(text, inner) or dynamic
                mask.append("_")
                quoted = True
            elif c in "$`":
                text.append(self._expansion(inner, in_double=False))
                mask.append("_")
                dynamic = True
            else:
                dynamic = dynamic or (c == "~" and (not mask or mask[-1] in "=:"))
                assignment = assignment or (c == "=" and not quoted and bool(_NAME.fullmatch("".join(text))))
                text.append(c)
                mask.append(c)
                self.i += 1
        unquoted = "".join(mask)
        dynamic = dynamic or bool(_BRACE_EXPANSION.search(unquoted))
        glob = bool(_GLOB.search(unquoted))
        return Word("".join(text), quoted, dynamic, glob, assignment, tuple(inner))

    def _double_quoted(self, text: list[str], inner: list[tuple[Token, ...]]) -> bool:
        """A "…" string at self.i, consumed, its text appended; whether it expands anything."""
        s, dynamic = self.s, False
        self.i += 1
        while True:
            if self.i >= len(s):
                raise Unparseable("a double quote is never closed")
            c = s[self.i]
            if c == '"':
                self.i += 1
                return dynamic
            if c == "\\" and s[self.i + 1 : self.i + 2] in ('"', "\\", "$", "`", "\n"):
                text.append(s[self.i + 1] if s[self.i + 1] != "\n" else "")
                self.i += 2
            elif c == "`" or (c == "$" and s[self.i + 1 : self.i + 2] not in ('"', "")):
                text.append(self._expansion(inner, in_double=True))
                dynamic = True
            else:
                text.append(c)
                self.i += 1

    def _expansion(self, inner: list[tuple[Token, ...]], in_double: bool) -> str:
        """One `$…` or backtick expansion at self.i, consumed; returns its text as written."""
        s, start = self.s, self.i
        nxt = s[self.i + 1 : self.i + 2]
        if s[self.i] == "`":
            inner.append(tuple(self._backticks(in_double)))
        elif s.startswith("$((", self.i) or nxt == "[":
            raise Unparseable("arithmetic expansion is not checked")
        elif nxt == "(":
            self.i += 2
            inner.append(tuple(self._nested()))
        elif nxt == "{":
            self._braced(inner, in_double)
        elif nxt == "'" and not in_double:
            self._ansi_c()
        elif nxt == '"' and not in_double:
            self.i += 1
            self._double_quoted([], inner)
        elif nxt and nxt in _SPECIAL_PARAMETERS:
            self.i += 2
        elif nxt and (nxt.isalpha() or nxt == "_"):
            self.i += 1
            while self.i < len(s) and (s[self.i].isalnum() or s[self.i] == "_"):
                self.i += 1
        else:
            self.i += 1  # a lone `$` is itself
        return s[start : self.i]

    def _nested(self) -> list[Token]:
        sub = _Lexer(self.s, self.depth + 1, self.i)
        tokens = sub.tokens(nested=True)
        self.i = sub.i
        return tokens

    def _backticks(self, in_double: bool) -> list[Token]:
        # Inside "…", bash also unescapes \" in the body: `"`echo \"'\"; rm x`"` runs rm.
        escaped = ("`", "\\", "$", '"') if in_double else ("`", "\\", "$")
        s, j, body = self.s, self.i + 1, []
        while j < len(s) and s[j] != "`":
            if s[j] == "\\" and s[j + 1 : j + 2] in escaped:
                j += 1
            body.append(s[j])
            j += 1
        if j >= len(s):
            raise Unparseable("a backtick is never closed")
        self.i = j + 1
        return _Lexer("".join(body), self.depth + 1).tokens()

    def _braced(self, inner: list[tuple[Token, ...]], in_double: bool) -> None:
        s = self.s
        self.i += 2
        if s[self.i : self.i + 1] in ("!", "("):
            raise Unparseable("indirect expansion `${!…}` and zsh's `${(…)…}` flags are not checked")
        self._check_operator()
        while self.i < len(s) and s[self.i] != "}":
            c = s[self.i]
            if c == "[":
                raise Unparseable("array subscripts (evaluated as arithmetic) are not checked")
            if in_double and c in "'\"":
                raise Unparseable("quotes inside a quoted `${…}` are read differently by bash and sh")
            if c == "`":  # bash keeps \" as it is in backticks inside ${…}, quoted or not
                inner.append(tuple(self._backticks(in_double=False)))
            elif c == "$":
                self._expansion(inner, in_double=True)
            elif c == '"':
                self._double_quoted([], inner)
            elif c == "'":
                end = s.find("'", self.i + 1)
                self.i = len(s) if end < 0 else end + 1
            else:
                self.i += 2 if c == "\\" else 1
        if self.i >= len(s):
            raise Unparseable("a `${` is never closed")
        self.i += 1

    def _check_operator(self) -> None:
        """Refuse the `${…}` operators that run code hidden in a variable's value: `${x@P}` (prompt expansion
        performs `$(…)`) and a `${x:offset}` that is not digits (arithmetic on `a[$(…)]` runs it)."""
        name = _PARAMETER.match(self.s, self.i)
        operator = self.s[name.end() if name else self.i :]
        if operator.startswith("@"):
            raise Unparseable("`${…@…}` transformations are not checked")
        if operator.startswith(":") and operator[1:2] not in ("-", "=", "+", "?"):
            if not _LITERAL_OFFSET.match(operator[1:]):
                raise Unparseable("a `${…:offset}` that is not plain digits is arithmetic, which is not checked")

    def _ansi_c(self) -> None:
        j = self.i + 2
        while j < len(self.s) and self.s[j] != "'":
            j += 2 if self.s[j] == "\\" else 1
        if j >= len(self.s):
            raise Unparseable("a `$'` quote is never closed")
        self.i = j + 1
