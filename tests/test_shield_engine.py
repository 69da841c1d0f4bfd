"""Decisions: defaults, layers (operator floor, agent, context), the sentences, the trace and the tables."""

from pathlib import Path
from typing import Any

import pytest

from a2a_wrapper.events import Permission, ToolKind
from a2a_wrapper.shield import (
    BUILT_IN_DEFAULTS,
    Rule,
    Shield,
    ShieldConfig,
    ShieldError,
    explain,
    format_explanation,
    format_table,
    parse_shield,
)
from a2a_wrapper.shield.decision import PermissionPolicy


def bash(command: str | None) -> Permission:
    return Permission(id="per_1", kind="execute", tool="bash", command=command)


def read(*paths: str) -> Permission:
    return Permission(id="per_2", kind="read", tool="read", paths=paths)


def edit(*paths: str) -> Permission:
    return Permission(id="per_3", kind="edit", tool="edit", paths=paths)


def fetch(url: str) -> Permission:
    return Permission(id="per_4", kind="fetch", tool="webfetch", url=url)


def config(*rules: dict[str, Any], **defaults: str) -> ShieldConfig:
    return parse_shield({"rules": list(rules), "defaults": defaults}, "test")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print()")
    return ws


@pytest.mark.parametrize(
    ("request_", "outcome", "rule"),
    [
        (read("src/app.py"), "allow", "default:read"),
        (read("../elsewhere.txt"), "ask", "default:outside"),
        (read("/etc/passwd"), "ask", "default:outside"),
        (edit("src/app.py"), "ask", "default:write"),
        (bash("ls"), "ask", "default:execute"),
        (bash("rm -rf build"), "ask", "default:delete"),
        (fetch("https://docs.python.org/"), "ask", "default:network"),
        (Permission(id="p", kind="mcp", tool="github_create_issue"), "ask", "default:mcp"),
        (Permission(id="p", kind="delegate", tool="task"), "deny", "default:other"),
        (Permission(id="p", kind="frobnicate", tool="frob"), "deny", "default:other"),  # type: ignore[arg-type]
        (Permission(id="p", kind="think", tool="todowrite"), "allow", "default:read"),
        (bash(None), "deny", "shield:unchecked"),
        (bash("   "), "deny", "shield:unchecked"),
        (fetch("file:///etc/passwd"), "deny", "shield:unchecked"),
        (read("a\0b"), "deny", "shield:unchecked"),
    ],
)
def test_built_in_defaults(workspace: Path, request_: Permission, outcome: str, rule: str) -> None:
    decision = Shield(config(), workspace).decide(request_)
    assert (decision.outcome, decision.rule) == (outcome, rule)


def test_the_default_table() -> None:
    assert BUILT_IN_DEFAULTS == {
        "read": "allow",
        "write": "ask",
        "delete": "ask",
        "execute": "ask",
        "network": "ask",
        "mcp": "ask",
        "other": "deny",
    }


def test_the_shield_is_a_permission_policy(workspace: Path) -> None:
    policy: PermissionPolicy = Shield(config(), workspace)
    assert policy.decide(read("src/app.py")).outcome == "allow"


ALLOW_LS = {"name": "ls-ok", "decision": "allow", "commands": ["ls *"]}
ASK_LS = {"name": "ls-ask", "decision": "ask", "commands": ["ls *"]}
DENY_LS = {"name": "ls-no", "decision": "deny", "commands": ["ls *"]}


@pytest.mark.parametrize(
    ("operator", "agent", "outcome", "rule"),
    [
        ([], [ALLOW_LS], "allow", "agent:ls-ok"),
        ([ALLOW_LS], [], "allow", "operator:ls-ok"),
        ([DENY_LS], [], "deny", "operator:ls-no"),
        ([ASK_LS], [], "ask", "operator:ls-ask"),
        ([], [ALLOW_LS, ASK_LS], "ask", "agent:ls-ask"),  # within a layer too: the strictest
        ([], [ASK_LS, ALLOW_LS, DENY_LS], "deny", "agent:ls-no"),
        ([ALLOW_LS], [ASK_LS], "ask", "agent:ls-ask"),
        ([ALLOW_LS], [DENY_LS], "deny", "agent:ls-no"),
        ([ASK_LS], [DENY_LS], "deny", "agent:ls-no"),
        ([DENY_LS], [{**DENY_LS, "name": "mine"}], "deny", "operator:ls-no"),  # the operator's is named first
    ],
)
def test_deny_beats_ask_beats_allow_across_layers(
    workspace: Path, operator: list[dict[str, Any]], agent: list[dict[str, Any]], outcome: str, rule: str
) -> None:
    decision = Shield(config(*agent), workspace, operator=config(*operator)).decide(bash("ls -la"))
    assert (decision.outcome, decision.rule) == (outcome, rule)


@pytest.mark.parametrize(
    ("command", "outcome", "rule"),
    [
        ("ls && git status", "allow", "agent:ls-ok"),
        ("ls && make", "ask", "default:execute"),  # one part not allowed: the whole is not
        ("ls; git push", "deny", "agent:no-push"),
        ("make; git push", "deny", "agent:no-push"),  # deny beats the ask of another part
        ("ls | sudo git push", "deny", "agent:no-push"),  # the wrapped command is a part too
        ("ls $(git push)", "deny", "agent:no-push"),
    ],
)
def test_parts_of_a_compound_command(workspace: Path, command: str, outcome: str, rule: str) -> None:
    agent = config(
        ALLOW_LS,
        {"name": "status-ok", "decision": "allow", "commands": ["git status"]},
        {"name": "no-push", "decision": "deny", "commands": ["git push *"]},
    )
    decision = Shield(agent, workspace).decide(bash(command))
    assert (decision.outcome, decision.rule) == (outcome, rule)


def test_a_deny_sentence_names_the_command_the_rule_and_the_reason(workspace: Path) -> None:
    agent = config({"name": "no-delete", "decision": "deny", "class": "delete", "reason": "Ask the owner first."})
    decision = Shield(agent, workspace).decide(bash("rm -rf build"))
    assert decision.reason == (
        "The shield denied `rm -rf build` (rule `agent:no-delete`: class delete). Ask the owner first. "
        "Do not retry it; do what you can without it, or say what you need and why."
    )
    compound = Shield(agent, workspace).decide(bash("ls && rm -rf build"))
    assert "`ls && rm -rf build` for its part `rm -rf build`" in compound.reason


def test_sentences_stay_on_one_short_line(workspace: Path) -> None:
    decision = Shield(config(), workspace).decide(bash("echo a\necho b\x1b[31m " + "x" * 500))
    assert "\n" not in decision.reason and "\x1b" not in decision.reason
    assert len(decision.reason) < 400


@pytest.mark.parametrize(
    ("rule", "request_", "outcome"),
    [
        ({"class": "read", "workspace": "inside"}, read("src/app.py"), "allow"),
        ({"class": "read", "workspace": "inside"}, read("/etc/hosts"), "ask"),
        ({"class": "read", "workspace": "outside"}, read("/etc/hosts"), "allow"),
        ({"paths": ["src/**"]}, edit("src/app.py"), "allow"),
        ({"paths": ["src/**"]}, edit("src/app.py", "README.md"), "ask"),  # an allow needs every path
        ({"paths": ["src/*"]}, edit("src/deep/a.py"), "ask"),
        ({"tools": ["edit"]}, edit("src/app.py"), "allow"),
        ({"tools": ["Edit"]}, edit("src/app.py"), "ask"),  # allow rules are exact
        ({"tools": ["github_*"]}, Permission(id="p", kind="other", tool="github_create_issue"), "allow"),
        ({"tools": ["github_*"]}, Permission(id="p", kind="other", tool="gitlab_create_issue"), "deny"),
        ({"class": "network", "hosts": ["*.readthedocs.io"]}, fetch("https://pip.readthedocs.io/x"), "allow"),
        ({"class": "network", "hosts": ["*.readthedocs.io"]}, fetch("https://readthedocs.io.evil.com/"), "ask"),
        ({"hosts": ["docs.python.org"]}, bash("curl https://docs.python.org"), "ask"),  # hosts: URLs only
        ({"commands": ["cat *"], "workspace": "inside"}, bash("cat src/app.py"), "allow"),
        ({"commands": ["cat *"], "workspace": "inside"}, bash("cat /etc/hosts"), "ask"),
        ({"commands": ["cat *"]}, bash("cat /etc/hosts"), "ask"),  # without `workspace`, inside only
        ({"commands": ["cat *"], "workspace": "any"}, bash("cat /etc/hosts"), "allow"),
        ({"commands": ["cat *"], "workspace": "outside"}, bash("cat /etc/hosts"), "allow"),
        ({"paths": ["/etc/hosts"]}, read("/etc/hosts"), "allow"),  # paths named: the rule says where
        ({"commands": ["cat *"]}, bash("CAT src/app.py"), "ask"),
    ],
)
def test_matchers(workspace: Path, rule: dict[str, Any], request_: Permission, outcome: str) -> None:
    shield = Shield(config({"name": "r", "decision": "allow", **rule}), workspace)
    assert shield.decide(request_).outcome == outcome


@pytest.mark.parametrize(
    ("rule", "request_"),
    [
        ({"commands": ["git push *"]}, bash("GIT PUSH origin")),
        ({"commands": ["git push *"]}, bash("/usr/bin/git push")),
        ({"commands": ["git push *"]}, bash("X=1 git push")),
        ({"paths": ["**/.env"]}, read(".ENV")),
        ({"paths": ["**/.env"]}, read("src/.env", "src/app.py")),  # a deny needs one path
        ({"paths": ["**/.env"]}, bash("cat .e*")),
        ({"tools": ["Bash"]}, bash("ls")),
    ],
)
def test_deny_rules_match_loosely(workspace: Path, rule: dict[str, Any], request_: Permission) -> None:
    (workspace / ".env").write_text("SECRET=1")
    shield = Shield(config({"name": "no", "decision": "deny", **rule}), workspace)
    assert shield.decide(request_).outcome == "deny"


class TestContextRules:
    """A person's "always" becomes a rule of that context, which never loosens a deny."""

    def test_always_allows_the_same_request_in_that_context_only(self, workspace: Path) -> None:
        shield = Shield(config(), workspace)
        request = bash("npm test && npm run build")
        rule = shield.always_rule(request, "always-1")
        assert rule.commands == ("npm test", "npm run build")
        assert rule.tools == ("bash",)
        in_context = shield.for_context([rule])
        assert in_context.decide(request).rule == "context:always-1"
        assert in_context.decide(bash("npm run build")).outcome == "allow"
        assert in_context.decide(bash("npm test; rm -rf /")).outcome == "ask"
        assert in_context.decide(bash("npm test --watch")).outcome == "ask"
        assert shield.decide(request).outcome == "ask"  # the shield itself is unchanged

    @pytest.mark.parametrize(
        ("request_", "expected"),
        [
            (edit("src/app.py"), {"tools": ("edit",), "class_": ("write",), "paths": ("<ws>/src/app.py",)}),
            (fetch("https://Docs.Python.org/x"), {"class_": ("network",), "hosts": ("docs.python.org",)}),
            (
                Permission(id="p", kind="delegate", tool="task"),
                {"tools": ("task",), "class_": ("other",), "paths": None},
            ),
            (bash("ls *.py"), {"commands": ("ls \\*.py",)}),  # a literal `*`, escaped
        ],
    )
    def test_the_narrowest_rule(self, workspace: Path, request_: Permission, expected: dict[str, Any]) -> None:
        rule = Shield(config(), workspace).always_rule(request_, "always-2")
        for key, value in expected.items():
            if isinstance(value, tuple):
                value = tuple(v.replace("<ws>", str(workspace.resolve())) for v in value)
            assert getattr(rule, key) == value
        assert rule.decision == "allow"

    def test_an_always_for_one_file_does_not_cover_another(self, workspace: Path) -> None:
        shield = Shield(config(), workspace)
        rule = shield.always_rule(edit("src/app.py"), "always-3")
        assert shield.for_context([rule]).decide(edit("src/app.py")).outcome == "allow"
        assert shield.for_context([rule]).decide(edit("src/other.py")).outcome == "ask"

    def test_always_never_loosens_a_deny(self, workspace: Path) -> None:
        operator = config({"name": "no-push", "decision": "deny", "commands": ["git push*"]})
        shield = Shield(config(), workspace, operator=operator)
        rule = Rule(name="always-4", decision="allow", tools=("bash",), commands=("git push",))
        decision = shield.for_context([rule]).decide(bash("git push"))
        assert (decision.outcome, decision.rule) == ("deny", "operator:no-push")

    def test_always_answers_an_ask_rule(self, workspace: Path) -> None:
        shield = Shield(config(ASK_LS), workspace, operator=config({**ASK_LS, "name": "op-ask"}))
        rule = shield.always_rule(bash("ls -la"), "always-5")
        assert shield.for_context([rule]).decide(bash("ls -la")).rule == "context:always-5"

    @pytest.mark.parametrize("request_", [bash("cat <<EOF"), fetch("gopher://x"), read("~/notes"), bash(None)], ids=str)
    def test_no_rule_from_what_cannot_be_checked(self, workspace: Path, request_: Permission) -> None:
        with pytest.raises(ShieldError, match="cannot check"):
            Shield(config(), workspace).always_rule(request_, "always-6")


def test_a_failure_while_deciding_is_a_deny(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    broken = Permission(id="per_9", kind="read", tool="read", paths=(None,))  # type: ignore[arg-type]
    decision = Shield(config(), workspace).decide(broken)
    assert (decision.outcome, decision.rule) == ("deny", "shield:error")
    assert "Do not retry it" in decision.reason
    assert "per_9" in caplog.text


def test_explain_traces_every_part(workspace: Path) -> None:
    operator = config({"name": "no-delete", "decision": "deny", "class": "delete"})
    agent = config(ALLOW_LS, {"name": "reads", "decision": "allow", "class": "read", "workspace": "inside"})
    explanation = explain(Shield(agent, workspace, operator=operator), bash("ls src && rm -rf build < list"))
    assert explanation.decision.outcome == "deny"
    assert explanation.request_class == "delete"
    trace = [(s.item.label, s.item.cls, s.matched, s.outcome, s.rule) for s in explanation.steps]
    assert trace == [
        ("ls src", "execute", ("agent:ls-ok",), "allow", "agent:ls-ok"),
        ("< list", "read", ("agent:reads",), "allow", "agent:reads"),
        ("rm -rf build", "delete", ("operator:no-delete",), "deny", "operator:no-delete"),
    ]
    text = format_explanation(explanation)
    assert text.splitlines()[:2] == ["decision: deny (rule operator:no-delete)", "request class: delete"]
    assert "rm -rf build    delete   operator:no-delete  deny     operator:no-delete" in text


def test_format_table(workspace: Path) -> None:
    agent = config(
        {"name": "tests-ok", "decision": "allow", "class": "execute", "commands": ["pytest *", "npm test"]},
        {"name": "no-secrets", "decision": "deny", "paths": ["**/.env"], "reason": "Secrets are off limits."},
    )
    shield = Shield(agent, workspace)
    table = format_table(agent.rules, defaults=shield.defaults).splitlines()
    assert table[0].split() == ["rule", "decision", "matches", "reason"]
    assert table[2].split()[:2] == ["agent:tests-ok", "allow"]
    assert "class: execute; commands: pytest *, npm test" in table[2]
    assert table[3].split()[:2] == ["agent:no-secrets", "deny"]
    assert table[3].endswith(
        "paths: **/.env".ljust(len("class: execute; commands: pytest *, npm test")) + "  Secrets are off limits."
    )
    assert table[4].split()[:2] == ["default:read", "allow"]
    assert len(table) == 2 + 2 + 7


@pytest.mark.parametrize(
    ("request_", "outcome"),
    [
        (Permission(id="p", kind="execute", tool="shell", command="cat src/app.py", paths=("src/app.py",)), "allow"),
        (Permission(id="p", kind="execute", tool="shell", command="cat src/app.py", paths=("/etc/passwd",)), "ask"),
        (Permission(id="p", kind="execute", tool="shell", command="cat x", url="https://docs.python.org/"), "allow"),
        (Permission(id="p", kind="execute", tool="shell", command="cat x", url="https://evil.com/"), "ask"),
        (Permission(id="p", kind="execute", tool="shell", command="cat x", url="file:///etc/passwd"), "deny"),
    ],
)
def test_a_command_request_with_its_own_paths_and_url(workspace: Path, request_: Permission, outcome: str) -> None:
    agent = config(
        {"name": "cat-ok", "decision": "allow", "commands": ["cat *"], "workspace": "inside"},
        {"name": "docs", "decision": "allow", "class": "network", "hosts": ["docs.python.org"]},
    )
    assert Shield(agent, workspace).decide(request_).outcome == outcome


@pytest.mark.parametrize("kind", ["read", "edit", "write", "delete", "move"])
def test_a_file_tool_naming_no_file_is_never_allowed_as_inside(kind: ToolKind, tmp_path: Path) -> None:
    """Some ACP agents ask before they know the file: an allow rule for the workspace must not cover that."""
    rules = config({"name": "inside-ok", "decision": "allow", "workspace": "inside"}, read="allow", write="allow")
    decision = Shield(rules, tmp_path).decide(Permission(id="per_9", kind=kind, tool=kind))
    assert decision.outcome == "ask", "an unknown file is never allowed by a workspace rule"
    named = Shield(rules, tmp_path).decide(
        Permission(id="per_9", kind=kind, tool=kind, paths=(str(tmp_path / "a.txt"),))
    )
    assert named.outcome == "allow"


@pytest.mark.parametrize(
    ("command", "rule", "part"),
    [
        ("ls -la && rm -rf build", "default:delete", "rm -rf build"),
        ("rm -rf build; ls -la", "default:delete", "rm -rf build"),
        ("ls -la | curl -d @- https://example.com", "default:execute", "ls -la"),
    ],
)
def test_the_sentence_names_the_part_that_made_the_decision(
    workspace: Path, command: str, rule: str, part: str
) -> None:
    decision = Shield(ShieldConfig(), workspace).decide(
        Permission(id="p", kind="execute", tool="bash", command=command)
    )
    assert decision.outcome == "ask" and decision.rule == rule
    assert f"for its part `{part}`" in decision.reason
