"""The classes of bypass found with the reference policy of issue 9, one table per class.

Reference policy: allow `git status/diff/log *`, `ls *`, `pytest *`, `cat *` inside the workspace; deny
`**/.env`, `~/.ssh/**` and writes to `.git/**`; network deny. Every case pins its outcome (never allow).
"""

import os
import pwd
from pathlib import Path
from typing import Any

import pytest

from a2a_wrapper.events import Permission
from a2a_wrapper.shield import Shield, explain, format_explanation, parse_shield
from a2a_wrapper.shield.commands import split

SAFE_COMMANDS = ["git status *", "git diff *", "git log *", "ls *", "pytest *", "cat *"]
DENIES: list[dict[str, Any]] = [
    {"name": "no-secrets", "decision": "deny", "paths": ["**/.env", "~/.ssh/**"]},
    {"name": "no-git-writes", "decision": "deny", "class": "write", "paths": [".git/**"]},
]
USER = pwd.getpwuid(os.getuid()).pw_name


def shield_for(ws: Path, *rules: dict[str, Any]) -> Shield:
    return Shield(parse_shield({"rules": [*rules, *DENIES], "defaults": {"network": "deny"}}, "test"), ws)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print()")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "README.md").write_text("hello")
    return ws


@pytest.fixture
def shield(ws: Path) -> Shield:
    allow = {"name": "safe-commands", "decision": "allow", "commands": SAFE_COMMANDS, "workspace": "inside"}
    return shield_for(ws, allow)


def bash(command: str, workdir: str | None = None) -> Permission:
    return Permission(id="per_1", kind="execute", tool="bash", command=command, workdir=workdir)


def decided(shield: Shield, request: Permission) -> tuple[str, str]:
    decision = shield.decide(request)
    assert explain(shield, request).decision == decision, "explain tells the story the decision tells"
    return decision.outcome, decision.rule


@pytest.mark.parametrize(
    ("command", "outcome"),
    [
        ("git status", "allow"),
        ("git diff --stat src", "allow"),
        ("ls -la src", "allow"),
        ("cat README.md src/app.py", "allow"),
        ("pytest -q src", "allow"),
        ("cat README.md <<< 'data'", "allow"),
    ],
)
def test_the_reference_policy_allows_what_it_means_to(shield: Shield, command: str, outcome: str) -> None:
    assert decided(shield, bash(command))[0] == outcome


COMPUTED = [
    ("ls -${_@P}", "deny"),  # prompt expansion runs the $(…) in $_
    ("ls -${_:_}", "deny"),  # the offset is arithmetic on $_, which runs a[$(…)]
    ("cd '$(id)'; cd ${_@P}", "deny"),
    ("cat README.md${x@Q}", "deny"),
    ("ls -$X", "ask"),
    ('ls -"$X"', "ask"),
    ("ls --color=$C src", "ask"),
    ("git status -${X:-s}", "ask"),
    ("git log ${@:2}", "ask"),
    ("ls $'-la'", "ask"),
    ("ls -l{a,}", "ask"),
    ("cat README.md <<< $X", "ask"),
    ('cat README.md <<< "${X}"', "ask"),
    ("cat README.md <<< ${_@P}", "deny"),
    ("ls -*", "ask"),  # a glob in an option word: the options are whatever files exist then
]


@pytest.mark.parametrize(("command", "outcome"), COMPUTED)
def test_a_word_computed_at_run_time_is_not_allowed_by_a_pattern(ws: Path, command: str, outcome: str) -> None:
    everything = shield_for(ws, {"name": "everything", "decision": "allow", "commands": ["*"], "workspace": "any"})
    assert decided(everything, bash(command))[0] == outcome


def test_the_sentence_says_why_no_rule_may_allow_it(shield: Shield) -> None:
    request = bash("ls -$X")
    assert "No rule may allow it: its word `-$X` is known only when the shell runs" in shield.decide(request).reason
    assert "no rule may allow `ls -$X`" in format_explanation(explain(shield, request))


@pytest.mark.parametrize(
    "command",
    [
        """cat "`echo \\"'\\"; rm -rf ~; echo \\"'\\"`\"""",  # inside "…", bash unescapes \" in backticks
        """cat ${x:-`echo \\"; rm -rf ~; echo \\"`}""",  # inside ${…} it does not, quoted or not
        """cat "${x:-`echo \\"; rm -rf ~; echo \\"`}\"""",
    ],
)
def test_backticks_split_as_bash_splits_them(command: str) -> None:
    assert "rm -rf ~" in [part.text for part in split(command)]


def test_a_glob_that_expands_to_an_option_is_not_allowed(ws: Path, shield: Shield) -> None:
    (ws / "--output=.git").mkdir()  # `git diff *` would read this name as `--output=.git` …
    assert decided(shield, bash("git diff *")) == ("ask", "default:execute")


@pytest.mark.parametrize(
    ("command", "outcome", "rule"),
    [
        ("git diff --output=.git/config", "deny", "agent:no-git-writes"),
        ("git log --output .git/config", "deny", "agent:no-git-writes"),
        ("git diff --output=README.md", "ask", "default:write"),
        ("git log -p --output=/tmp/log.txt", "ask", "default:execute"),  # it names a path outside
        ("pytest --junitxml=.git/config", "deny", "agent:no-git-writes"),
        ("pytest --junit-xml=report.xml", "ask", "default:write"),
        ("pytest --basetemp=.git", "deny", "agent:no-git-writes"),  # emptied first: a delete
        ("pytest --basetemp=build/tmp", "ask", "default:delete"),
        ("pytest --report-log=.git/hooks/pre-commit", "deny", "agent:no-git-writes"),
        ("pytest -o cache_dir=/tmp/c", "ask", "default:execute"),  # opaque: ini values can be anything
        ("git -c core.fsmonitor=id status", "ask", "default:execute"),
        ("ls --output=listing.txt", "ask", "default:execute"),  # an --output-like option nobody knows
        ("pytest --report-dir=out src", "ask", "default:execute"),
        ("cat --log-file=x README.md", "ask", "default:execute"),
    ],
)
def test_options_that_write_files_are_writes(shield: Shield, command: str, outcome: str, rule: str) -> None:
    assert decided(shield, bash(command)) == (outcome, rule)


@pytest.mark.parametrize(
    ("command", "outcome"),
    [
        ("pytest --junitxml=build/report.xml", "allow"),
        ("pytest --junitxml=report.xml", "ask"),
        ("git diff --output=build/x.diff", "allow"),
        ("git diff --output=build/x.diff; cat /etc/hosts", "ask"),
    ],
)
def test_a_written_file_is_judged_by_path_rules(ws: Path, command: str, outcome: str) -> None:
    shield = shield_for(
        ws,
        {"name": "safe-commands", "decision": "allow", "commands": SAFE_COMMANDS, "workspace": "inside"},
        {"name": "build-output", "decision": "allow", "class": "write", "paths": ["build/**"]},
    )
    assert decided(shield, bash(command))[0] == outcome


@pytest.mark.parametrize(
    ("rule", "outcome"),
    [
        ({"commands": ["pytest *"], "workspace": "inside"}, "ask"),  # running pytest, not writing its report
        ({"commands": ["pytest *"], "class": ["execute", "write"], "workspace": "inside"}, "allow"),
        ({"commands": ["pytest *"], "class": ["execute"], "workspace": "inside"}, "ask"),
    ],
)
def test_a_commands_rule_covers_what_it_writes_when_its_class_says_so(
    ws: Path, rule: dict[str, Any], outcome: str
) -> None:
    shield = shield_for(ws, {"name": "pytest", "decision": "allow", **rule})
    assert decided(shield, bash("pytest --junitxml=report.xml"))[0] == outcome


@pytest.mark.parametrize("command", ["touch notes.txt", "pytest --junitxml=report.xml", "tee -a log.txt"])
def test_always_covers_the_files_the_command_writes(shield: Shield, command: str) -> None:
    request = bash(command)
    assert shield.decide(request).outcome == "ask"
    always = shield.for_context([shield.always_rule(request, "always-1")])
    assert always.decide(request).outcome == "allow"
    assert always.decide(bash(command + " other.txt")).outcome == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "echo x > .git/config",
        ">.git/config",
        ">>.git/config",
        "cat README.md 1> .git/config",
        "ls &>> .git/config",
        "tee .git/config",
        "cat README.md | tee -a .git/config",
        "cp README.md .git/config",
        "mv README.md .git/config",
        "install README.md .git/config",
        "dd if=README.md of=.git/config",
        "sed -i s/a/b/ .git/config",
        "touch .git/hooks/post-checkout",
        "cd .git && tee config",
        "git diff --output=./src/../.git/config",
        "sudo tee .git/config",
        "bash -c 'cat README.md > .git/config'",
        "git status; >.git/config",
    ],
)
def test_writes_to_git_config_are_denied_by_any_spelling(shield: Shield, command: str) -> None:
    assert decided(shield, bash(command)) == ("deny", "agent:no-git-writes")


@pytest.mark.parametrize(
    ("rules", "outcome"),
    [
        ([], "ask"),
        ([{"name": "inside", "decision": "allow", "class": ["write", "delete"], "workspace": "inside"}], "allow"),
        ([{"name": "no-readme", "decision": "deny", "class": "write", "paths": ["README.md"]}], "deny"),
    ],
)
def test_a_redirection_alone_is_a_write_judged_by_rules(ws: Path, rules: list[dict[str, Any]], outcome: str) -> None:
    assert decided(shield_for(ws, *rules), bash(">README.md"))[0] == outcome


@pytest.mark.parametrize(
    ("command", "workdir", "outcome"),
    [
        ("cat app.py", "src", "allow"),
        ("cat app.py", "{ws}/src", "allow"),
        ("ls", "src", "allow"),
        ("cat passwd", "/etc", "ask"),
        ("ls", "/", "ask"),  # a workdir outside is itself a read outside
        ("ls", "src/../..", "ask"),
        ("cat ../.env", "src", "deny"),
        ("tee config", ".git", "deny"),
        ("git diff --output=../.git/config", "src", "deny"),
        ("cat id_rsa", "~/.ssh", "deny"),
        ("ls", "~/.ssh", "deny"),
        ("cat app.py", "$HOME", "ask"),
    ],
)
def test_the_workdir_is_where_relative_paths_start(
    ws: Path, shield: Shield, command: str, workdir: str, outcome: str
) -> None:
    (ws / ".env").write_text("SECRET=1")
    assert decided(shield, bash(command, workdir.format(ws=ws)))[0] == outcome


@pytest.mark.parametrize(
    "request_",
    [
        bash("cat ~/.ssh/id_rsa"),
        bash(f"cat ~{USER}/.ssh/id_rsa"),
        bash("cat $HOME/.ssh/id_rsa"),
        bash("cat ${HOME}/.ssh/id_rsa"),
        bash('cat "$HOME/.ssh/id_rsa"'),
        bash('cat "$HOME"/.ssh/config'),
        bash("cat < ~/.ssh/id_rsa"),
        bash("cp ~/.ssh/id_rsa stolen"),
        bash("cat --file=~/.ssh/id_rsa"),
        bash("cd ~/.ssh && cat id_rsa"),
        Permission(id="per_2", kind="read", tool="read", paths=("~/.ssh/id_rsa",)),
        Permission(id="per_2", kind="read", tool="read", paths=(f"~{USER}/.ssh",)),
    ],
    ids=lambda request: request.command or request.paths[0],
)
def test_home_is_expanded_for_deny_rules(shield: Shield, request_: Permission) -> None:
    assert decided(shield, request_) == ("deny", "agent:no-secrets")


def test_home_means_home_and_the_user_database_both(
    ws: Path, tmp_path: Path, shield: Shield, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    for command in ("cat ~/.ssh/id_rsa", f"cat ~{USER}/.ssh/id_rsa", "cat $HOME/.ssh/id_rsa"):
        assert decided(shield, bash(command)) == ("deny", "agent:no-secrets"), command


def test_a_home_path_is_never_allowed_by_a_pattern(ws: Path) -> None:
    home = shield_for(ws, {"name": "home", "decision": "allow", "paths": ["~/**"], "commands": ["cat *"]})
    assert decided(home, bash("cat ~/notes.txt"))[0] == "ask"  # the backend may run with a HOME of its own


@pytest.mark.parametrize(
    ("workspace", "command", "outcome"),
    [
        (None, "cat README.md", "allow"),
        (None, "cat /etc/hosts", "ask"),
        (None, "git diff --output=/tmp/x", "ask"),
        (None, "cat src/../../outside.txt", "ask"),
        ("outside", "cat /etc/hosts", "allow"),
        ("any", "cat /etc/hosts", "allow"),
        ("any", "git diff --output=/tmp/x", "ask"),  # the command is allowed; the file it writes is not
    ],
)
def test_an_allow_rule_allows_outside_only_when_it_says_so(
    ws: Path, workspace: str | None, command: str, outcome: str
) -> None:
    rule = {"name": "safe-commands", "decision": "allow", "commands": SAFE_COMMANDS}
    shield = shield_for(ws, rule if workspace is None else {**rule, "workspace": workspace})
    assert decided(shield, bash(command))[0] == outcome


@pytest.mark.parametrize(
    ("command", "outcome"),
    [
        ("declare -i x='a[$(id)]'", "deny"),
        ("typeset -i x; x='a[$(id)]'", "deny"),
        ("local -n ref='a[$(id)]'", "deny"),
        ("let 'x=a[$(id)]'", "deny"),
        ("read 'a[$(id)]' <<< 1", "deny"),
        ("printf -v 'a[$(id)]' %s x", "deny"),
        ("unset 'a[$(id)]'", "deny"),
        ("test -v 'a[$(id)]'", "deny"),
        ("cat ${x:_}", "deny"),
        ("cat $((1 + 2))", "deny"),
        ("cat $[1]", "deny"),
        ("cat $(id)", "ask"),
        ("cat <(id)", "ask"),
        ('cat "$(id)"', "ask"),
        ("printf 'a[%s]' x", "ask"),  # a format, not a name
        ("export X=1", "ask"),
        ("declare -r X=1", "ask"),
    ],
)
def test_code_hidden_in_arithmetic_or_substitutions_is_not_allowed(shield: Shield, command: str, outcome: str) -> None:
    assert decided(shield, bash(command))[0] == outcome
