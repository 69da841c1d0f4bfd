"""Compound commands taken apart; what cannot be taken apart is refused."""

import pytest

from a2a_wrapper.shield.commands import split
from a2a_wrapper.shield.shell import MAX_LENGTH, Unparseable, lex


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("git status", ["git status"]),
        ("ls  -la\tsrc", ["ls -la src"]),
        ("ls; rm -rf /", ["ls", "rm -rf /"]),
        ("ls && rm x || echo no", ["ls", "rm x", "echo no"]),
        ("ls | grep a |& sort", ["ls", "grep a", "sort"]),
        ("sleep 1 & rm x", ["sleep 1", "rm x"]),
        ("ls\nrm x", ["ls", "rm x"]),
        ("ls &&\n  rm x", ["ls", "rm x"]),
        ("(cd src && rm x)", ["cd src", "rm x"]),
        ("{ rm x; }", ["rm x"]),
        ("if test -f x; then rm x; else touch x; fi", ["test -f x", "rm x", "touch x"]),
        ("while read f; do rm $f; done < list", ["read f", "rm $f", "< list"]),
        ("for f in a b; do cat $f; done", ["for f in a b", "cat $f"]),
        ("! grep -q x f", ["grep -q x f"]),
        ("time -p make", ["make"]),
        ("git status $(rm -rf ~)", ["rm -rf ~", "git status $(rm -rf ~)"]),
        ("ls `rm x`", ["rm x", "ls `rm x`"]),
        ('echo "$(rm x)"', ["rm x", "echo $(rm x)"]),
        ("echo '$(rm x)'", ["echo $(rm x)"]),  # single quotes: no substitution
        ("echo $(ls $(rm x))", ["rm x", "ls $(rm x)", "echo $(ls $(rm x))"]),
        ("echo ${X:-$(rm x)}", ["rm x", "echo ${X:-$(rm x)}"]),
        ("diff <(ls a) >(rm b)", ["ls a", "rm b", "diff <(ls a) >(rm b)"]),
        ("bash -c 'ls; rm -rf /'", ["bash -c ls; rm -rf /", "ls", "rm -rf /"]),
        ('sh -lc "rm x"', ["sh -lc rm x", "rm x"]),
        ("su -c 'rm x' root", ["su -c rm x root", "rm x"]),
        ("eval 'rm -rf x'", ["eval rm -rf x", "rm -rf x"]),
        ("env X=1 Y=2 rm x", ["env X=1 Y=2 rm x", "rm x"]),
        ("X=1 rm x", ["X=1 rm x"]),
        ("sudo -u root rm x", ["sudo -u root rm x", "rm x"]),
        ("sudo env X=1 rm x", ["sudo env X=1 rm x", "env X=1 rm x", "rm x"]),
        ("timeout -s KILL 5 rm x", ["timeout -s KILL 5 rm x", "rm x"]),
        ("nohup nice -n 5 rm x &", ["nohup nice -n 5 rm x", "nice -n 5 rm x", "rm x"]),
        ("ls | xargs rm", ["ls", "xargs rm", "rm {stdin}"]),
        ("xargs -I {} rm {}", ["xargs -I {} rm {}", "rm {} {stdin}"]),
        ("find . -exec rm {} \\;", ["find . -exec rm {} ;", "rm {}"]),
        ("watch -n 1 'rm x'", ["watch -n 1 rm x", "rm x"]),
        ("cat a > b", ["> b", "cat a"]),
        ("cat a >> b", [">> b", "cat a"]),
        (": > b", ["> b", ":"]),
        ("cmd < in 2> err", ["< in", "> err", "cmd"]),
        ("cmd > /dev/null 2>&1", ["cmd"]),
        ("cmd &> log", ["&> log", "cmd"]),
        ("cat <<< 'data'", ["cat"]),
        ("r''m x", ["rm x"]),
        ('"rm" x', ["rm x"]),
        ("\\rm x", ["rm x"]),
        ("r\\m x", ["rm x"]),
        ("r\\\nm x", ["rm x"]),  # a line continuation joins the word
        ("ls # ; rm -rf /", ["ls"]),  # a comment
        ("ls a#b", ["ls a#b"]),
        ("ls;", ["ls"]),
        ("", []),
        ("   ", []),
    ],
)
def test_split(command: str, parts: list[str]) -> None:
    assert [part.text for part in split(command)] == parts


@pytest.mark.parametrize(
    ("command", "because"),
    [
        ("echo 'open", "single quote"),
        ('echo "open', "double quote"),
        ("echo `open", "backtick"),
        ("echo $(open", "never closed"),
        ("ls )", "closes nothing"),
        ("echo \\", "backslash"),
        ("cat <<EOF\nrm -rf /\nEOF", "heredoc"),
        ("cat <<-EOF\nx\nEOF", "heredoc"),
        ("case x in a) rm;; esac", "closes nothing"),
        ("case x in *) rm;; esac", "closes nothing"),
        ("$(case x in (a) rm;; esac)", "case"),
        ("echo $((1 + 2))", "arithmetic"),
        ("((x = 1))", "arithmetic"),
        ("echo $[1+2]", "arithmetic"),
        ("echo ${!name}", "indirect"),
        ("echo ${(e)x}", "zsh"),
        ('echo "${x:-\'}" ; rm -rf / ; echo "\'}"', "bash and sh"),
        ('echo "${x:-"a"}"', "bash and sh"),
        ("echo ${a[$(rm x)]}", "array"),
        ("[[ $x -eq 1 ]]", "not checked"),
        ("f() { rm -rf /; }; f", "middle of a command"),
        ("$CMD -rf /", "command name"),
        ("${X}rm x", "command name"),
        ("/bin/r? x", "command name"),
        ("{rm,-rf,x}", "command name"),
        ("~/bin/tool", "command name"),
        ("sudo $X", "command name"),
        ('bash -c "$X"', "built when the shell runs"),
        ("eval $X", "built when the shell runs"),
        ("bash -c", "no script"),
        ("env -S 'rm x'", "env -S"),
        ("; ls", "no command before"),
        ("ls ;; rm", "case"),
        ("ls && ; rm", "no command before"),
        ("ls &&", "no command after"),
        ("ls\n&& rm", "no command before"),
        ("ls |", "no command after"),
        ("cat >", "no file after"),
        ("ls\0; rm", "NUL"),
        ("ls " + "a " * MAX_LENGTH, "longer than"),
        ("echo " + "$(" * 20 + "x" + ")" * 20, "deeper"),
    ],
)
def test_unparseable(command: str, because: str) -> None:
    with pytest.raises(Unparseable, match=because):
        split(command)


@pytest.mark.parametrize("wrapper", ["eval", "sudo", "env X=1", "nohup"])
def test_deep_nesting_through_wrappers_is_refused(wrapper: str) -> None:
    with pytest.raises(Unparseable, match="deeper"):
        split(f"{wrapper} " * 12 + "rm x")


@pytest.mark.parametrize(
    ("word", "dynamic", "glob", "assignment"),
    [
        ("plain", False, False, False),
        ("$HOME/x", True, False, False),
        ('"$HOME"', True, False, False),
        ("'$HOME'", False, False, False),
        ("~/x", True, False, False),
        ("'~/x'", False, False, False),
        ("a{b,c}", True, False, False),
        ("a{1..3}", True, False, False),
        ("'a{b,c}'", False, False, False),
        ("{}", False, False, False),
        ("$'\\x72m'", True, False, False),
        ("*.py", False, True, False),
        ("'*.py'", False, False, False),
        ("[", False, False, False),
        ("[ab]", False, True, False),
        ("X=1", False, False, True),
        ('"X"=1', False, False, False),
        ("X=~/a", True, False, True),
    ],
)
def test_word_flags(word: str, dynamic: bool, glob: bool, assignment: bool) -> None:
    (token,) = lex(word)
    assert (token.dynamic, token.glob, token.assignment) == (dynamic, glob, assignment)  # type: ignore[union-attr]
