"""The one table of what commands write besides their redirections, and the options the shield cannot judge.

`git diff --output=F`, `pytest --junitxml=F`, `cp a F`, `tee F`, `dd of=F`, `sed -i … F`: each names a file
the command writes, which is decided as a write (by path rules), not as part of the command. `pytest
--basetemp=D` empties D first: a delete. An option the table marks opaque (`git -c`, `pytest -o`) changes
what the program does in ways no pattern can see; so does a long option that looks like it names an output
(`--output…`, `--…-file`, `--…-dir`, `--…-log`, `--…-report`) and is not in the table. A part with such an
option is never allowed by a rule; it can still be asked or denied.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from a2a_wrapper.shield.classes import Class, command_name
from a2a_wrapper.shield.shell import Word


@dataclass(frozen=True, slots=True)
class Writes:
    """What one program writes. `--out` in `options` takes `--out=F` and `--out F`; `-o` takes `-oF` and `-o F`;
    `of=` takes `of=F` only."""

    options: frozenset[str] = frozenset()
    deletes: frozenset[str] = frozenset()  # options whose value is emptied or removed first
    operands: Literal["none", "last", "all"] = "none"
    when: tuple[str, ...] = ()  # the operands are written only with an option starting with one of these
    opaque: frozenset[str] = frozenset()


_COPIES = Writes(options=frozenset({"-t", "--target-directory"}), operands="last")
_PYTEST = Writes(
    options=frozenset(
        {"--junitxml", "--junit-xml", "--result-log", "--resultlog", "--report-log", "--log-file", "--html", "--debug"}
        | {"--json-report-file"}
    ),
    deletes=frozenset({"--basetemp"}),
    opaque=frozenset({"-o", "--override-ini", "--pastebin"}),
)
WRITES: dict[str, Writes] = {
    "git": Writes(
        options=frozenset({"--output", "-o", "--output-directory"}),
        opaque=frozenset({"-c", "-C", "--config-env", "--exec-path"}),  # config can name commands to run
    ),
    "pytest": _PYTEST,
    "py.test": _PYTEST,
    "cp": _COPIES,
    "mv": _COPIES,
    "install": _COPIES,
    "ln": _COPIES,
    "tee": Writes(operands="all"),
    "touch": Writes(operands="all"),
    "mkdir": Writes(operands="all"),
    "truncate": Writes(operands="all"),
    "dd": Writes(options=frozenset({"of="})),
    "sed": Writes(operands="all", when=("-i", "--in-place")),
    "sort": Writes(options=frozenset({"-o", "--output"})),
    "curl": Writes(options=frozenset({"-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--trace"})),
    "wget": Writes(options=frozenset({"-O", "--output-document", "-o", "--output-file", "-P", "--directory-prefix"})),
}
_OUTPUT_LAST = frozenset({"output", "out", "file", "dir", "log", "dest", "destination", "report", "outdir", "outfile"})
_OUTPUT_FIRST = frozenset({"output", "out", "save", "dump", "write", "export"})


def written(words: Sequence[Word]) -> Iterator[tuple[Word, str, Class]]:
    """(word, the path it names, write or delete) for every file the command (its words, name first) writes."""
    spec = WRITES.get(command_name(words[0].text)) if words else None
    if spec is None:
        return
    args = list(words[1:])
    operands = _operands(args, spec)
    if not spec.when or any(w.text.startswith(spec.when) for w in args):
        chosen = operands[-1:] if spec.operands == "last" and len(operands) > 1 else operands
        yield from ((word, word.text, "write") for word in (chosen if spec.operands != "none" else []))
    for i, word in enumerate(args):
        for option in spec.options | spec.deletes:
            value = _value(option, word, args[i + 1] if i + 1 < len(args) else None)
            if value is not None:
                yield *value, "delete" if option in spec.deletes else "write"


def unjudged(words: Sequence[Word]) -> str | None:
    """Why no rule may allow this command: an option that changes it in ways no pattern sees; None if none."""
    spec = WRITES.get(command_name(words[0].text), Writes()) if words else Writes()
    for word in words[1:]:
        text = word.text
        if text == "--":
            return None
        if any(text == o or (text.startswith(o) and o.startswith("--") and text[len(o)] == "=") for o in spec.opaque):
            return f"its option `{text}` changes what the program does in ways the shield cannot check"
        name = text[2:].split("=", 1)[0] if text.startswith("--") else ""
        known = any(text.split("=", 1)[0] == o for o in spec.options | spec.deletes)
        parts = name.split("-")
        if name and not known and (parts[-1] in _OUTPUT_LAST or parts[0] in _OUTPUT_FIRST):
            return f"its option `{text}` may write a file the shield does not know of"
    return None


def _operands(args: list[Word], spec: Writes) -> list[Word]:
    """The words that are not options or option values (after `--`, all of them)."""
    found: list[Word] = []
    i = 0
    while i < len(args):
        text = args[i].text
        if text == "--":
            return found + args[i + 1 :]
        if text.startswith("-") and text != "-":
            i += 2 if text in spec.options | spec.deletes else 1
            continue
        found.append(args[i])
        i += 1
    return found


def _value(option: str, word: Word, following: Word | None) -> tuple[Word, str] | None:
    """The word holding the value `option` takes at `word`, and the value; None if `word` is not that option."""
    text = word.text
    if text == option and not option.endswith("="):
        return None if following is None else (following, following.text)
    joined = option if option.endswith("=") or not option.startswith("--") else option + "="
    if option.startswith("-") and not option.startswith("--") and text.startswith("--"):
        return None
    return (word, text[len(joined) :]) if text.startswith(joined) and len(text) > len(joined) else None
