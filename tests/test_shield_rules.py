"""The `shield:` section: what loads, what does not (naming the rule and the key), and the operator floor."""

from pathlib import Path
from typing import Any

import pytest

from a2a_wrapper.config.files import load_operator_rules
from a2a_wrapper.shield import Shield, ShieldConfig, ShieldError, parse_shield

EXAMPLE = """
shield:
  defaults: {read: allow, write: ask, delete: ask, execute: ask, network: ask, mcp: ask, other: deny}
  rules:
    - name: tests-ok
      decision: allow
      class: execute
      commands: ["pytest *", "npm test", "git status", "git diff *"]
      workspace: inside
    - name: no-secrets
      decision: deny
      paths: ["**/.env", "**/*.pem"]
      reason: "Secrets are off limits."
    - name: docs-site
      decision: allow
      class: network
      hosts: ["docs.python.org", "*.readthedocs.io"]
    - name: github-mcp
      decision: allow
      tools: ["github_*"]
  ask_timeout: 300
"""


def test_the_documented_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "operator.yaml"
    path.write_text(EXAMPLE)
    config = load_operator_rules(path)
    assert [rule.name for rule in config.rules] == ["tests-ok", "no-secrets", "docs-site", "github-mcp"]
    assert config.rules[0].class_ == ("execute",)
    assert config.rules[2].hosts == ("docs.python.org", "*.readthedocs.io")
    assert config.defaults.other == "deny"


def test_camel_case_keys_load_like_the_rest_of_the_config() -> None:
    assert parse_shield({"askTimeout": 60}, "agent.yaml").ask_timeout == 60


def _rule(**keys: Any) -> dict[str, Any]:
    return {"name": "bad-one", "decision": "deny", **keys}


@pytest.mark.parametrize(
    ("rule", "key", "because"),
    [
        (_rule(pathz=["x"]), "pathz", "unknown key"),
        (_rule(regex="^rm"), "regex", "unknown key"),  # no regexes: nothing to backtrack
        (_rule(commands=["rm"], pattern="(a+)+$"), "pattern", "unknown key"),
        (_rule(paths=["[abc"]), "paths", "never closed"),
        (_rule(paths=["src/**.py"]), "paths", "whole segment"),
        (_rule(paths=["../etc/*"]), "paths", "`..`"),
        (_rule(paths=[]), "paths", "is empty"),
        (_rule(commands=["rm\\"]), "commands", "end with"),
        (_rule(commands=[" "]), "commands", "non-empty"),
        (_rule(commands=["a\nb"]), "commands", "one non-empty line"),
        (_rule(hosts=["ev*l.com"]), "hosts", "sub-domains"),
        (_rule(hosts=["http://evil.com"]), "hosts", "write the host alone"),
        (_rule(hosts=["1.2.3.999"]), "hosts", "IPv4"),
        (_rule(**{"class": "exec"}), "class.0", "Input should be"),
        (_rule(**{"class": []}), "class", "is empty"),
        (_rule(workspace="in"), "workspace", "Input should be"),
        (_rule(tools=[5]), "tools.0", "valid string"),
        (_rule(reason="x" * 400), "reason", "at most 300"),
        ({"name": "bad-one", "decision": "maybe", "class": "read"}, "decision", "Input should be"),
        ({"name": "bad-one", "class": "read"}, "decision", "Field required"),
    ],
)
def test_a_bad_rule_names_the_rule_and_the_key(tmp_path: Path, rule: dict[str, Any], key: str, because: str) -> None:
    with pytest.raises(ShieldError) as raised:
        parse_shield({"rules": [{"name": "fine", "decision": "allow", "class": "read"}, rule]}, "agent.yaml")
    message = str(raised.value)
    assert message.startswith("agent.yaml: shield.rules.1: rule `bad-one`: ")
    assert f"{key}: " in message
    assert because in message


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (
            {"rules": [{"decision": "deny", "class": "read"}]},
            "shield.rules.0: a rule without a name: name: Field required",
        ),
        ({"rules": [{"name": "x", "decision": "deny"}]}, "rule `x`: a rule needs at least one of class"),
        ({"rules": [{"name": "has space", "decision": "deny", "class": "read"}]}, "rule `has space`: name: String"),
        (
            {"rules": [{"name": "x", "decision": "deny", "class": "read"}] * 2},
            "shield: rule `x`: name: used by more than one rule",
        ),
        ({"defaults": {"exec": "allow"}}, "shield.defaults.exec: unknown key"),
        ({"defaults": {"read": "yes"}}, "shield.defaults.read: Input should be"),
        ({"ask_timeout": 0}, "shield.ask_timeout: Input should be greater than 0"),
        ({"rule": []}, "shield.rule: unknown key"),
    ],
)
def test_other_bad_sections(section: dict[str, Any], expected: str) -> None:
    with pytest.raises(ShieldError, match=r"^agent\.yaml: ") as raised:
        parse_shield(section, "agent.yaml")
    assert expected in str(raised.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("shield: {rules: []}\nextra: 1\n", "extra: unknown key"),
        ("other: 1\n", "other: unknown key"),
        ("{}\n", "shield: missing"),
        ("shield: [1, 2]\n", "Input should be a valid dictionary"),
        ("shield: {rules: [{name: x, decision: deny, paths: ['[']}]}\n", "rule `x`: paths"),
        ("- just a list\n", "must be a mapping"),
        ("shield: {rules: [\n", "not valid YAML"),
    ],
)
def test_bad_operator_files(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "operator.yaml"
    path.write_text(text)
    with pytest.raises(ShieldError) as raised:
        load_operator_rules(path)
    assert str(path) in str(raised.value)
    assert expected in str(raised.value)


def test_a_missing_operator_file(tmp_path: Path) -> None:
    with pytest.raises(ShieldError, match="cannot read"):
        load_operator_rules(tmp_path / "nope.yaml")


def _config(*rules: dict[str, Any], **defaults: str) -> ShieldConfig:
    return parse_shield({"rules": list(rules), "defaults": defaults}, "test")


@pytest.mark.parametrize(
    ("operator", "agent", "names"),
    [
        (
            {"name": "no-exec", "decision": "deny", "class": "execute"},
            {"name": "tests-ok", "decision": "allow", "class": "execute", "commands": ["pytest *"]},
            ["tests-ok", "no-exec"],
        ),
        (
            {"name": "no-exec", "decision": "deny", "class": "execute"},
            {"name": "exec-ok", "decision": "allow", "class": "execute"},
            ["exec-ok", "no-exec"],
        ),
        (
            {"name": "ask-net", "decision": "ask", "class": "network"},
            {"name": "docs", "decision": "allow", "class": "network", "hosts": ["docs.python.org"]},
            ["docs", "ask-net"],
        ),
        (
            {"name": "no-push", "decision": "deny", "commands": ["git push*"]},
            {"name": "push-main", "decision": "ask", "commands": ["git push origin main"]},
            ["push-main", "no-push"],
        ),
        (
            {"name": "no-git", "decision": "deny", "commands": ["git *"]},
            {"name": "git-log", "decision": "allow", "commands": ["git log *"]},
            ["git-log", "no-git"],
        ),
        (
            {"name": "no-secrets", "decision": "deny", "paths": ["**/.env"]},
            {"name": "env-ok", "decision": "allow", "paths": ["config/.env"]},
            ["env-ok", "no-secrets"],
        ),
        (
            {"name": "no-etc", "decision": "deny", "paths": ["/etc/**"]},
            {"name": "etc-ssl", "decision": "allow", "paths": ["/etc/ssl/**"]},
            ["etc-ssl", "no-etc"],
        ),
        (
            {"name": "no-corp", "decision": "deny", "hosts": ["*.corp.example"]},
            {"name": "wiki", "decision": "allow", "hosts": ["wiki.corp.example"]},
            ["wiki", "no-corp"],
        ),
        (
            {"name": "no-mcp", "decision": "deny", "tools": ["github_*"]},
            {"name": "issues", "decision": "allow", "tools": ["github_create_issue"]},
            ["issues", "no-mcp"],
        ),
    ],
)
def test_an_agent_rule_cannot_loosen_the_operator_floor(
    tmp_path: Path, operator: dict[str, Any], agent: dict[str, Any], names: list[str]
) -> None:
    with pytest.raises(ShieldError) as raised:
        Shield(_config(agent), tmp_path, operator=_config(operator))
    message = str(raised.value)
    assert f"agent rule `{names[0]}`" in message
    assert f"operator rule `{names[1]}`" in message
    assert "floor" in message or "loosen" in message


@pytest.mark.parametrize(
    ("operator", "agent"),
    [
        (  # the agent's rule is stricter
            {"name": "ask-exec", "decision": "ask", "class": "execute"},
            {"name": "no-rm", "decision": "deny", "class": "execute", "commands": ["rm *"]},
        ),
        (  # the agent's rule reaches beyond the operator's: it loads, and the deny still wins where both match
            {"name": "no-secrets", "decision": "deny", "paths": ["**/.env"]},
            {"name": "tests-ok", "decision": "allow", "commands": ["pytest *"]},
        ),
        (
            {"name": "no-etc", "decision": "deny", "paths": ["/etc/**"]},
            {"name": "src", "decision": "allow", "paths": ["src/**"]},
        ),
        (
            {"name": "no-net", "decision": "deny", "class": "network", "hosts": ["evil.com"]},
            {"name": "docs", "decision": "allow", "class": "network", "hosts": ["docs.python.org"]},
        ),
    ],
)
def test_agent_rules_that_do_not_loosen_load(tmp_path: Path, operator: dict[str, Any], agent: dict[str, Any]) -> None:
    Shield(_config(agent), tmp_path, operator=_config(operator))


def test_an_agent_default_cannot_loosen_the_operators(tmp_path: Path) -> None:
    with pytest.raises(ShieldError, match=r"agent default `execute: allow` would loosen the operator default"):
        Shield(_config(execute="allow"), tmp_path, operator=_config(execute="ask"))
    shield = Shield(_config(execute="deny"), tmp_path, operator=_config(execute="ask", network="deny"))
    assert shield.defaults["execute"] == "deny"
    assert shield.defaults["network"] == "deny"  # the operator's, as the agent sets none
    assert shield.defaults["read"] == "allow"  # built in


def test_every_conflict_is_listed(tmp_path: Path) -> None:
    operator = _config({"name": "no-exec", "decision": "deny", "class": "execute"}, network="ask")
    agent = _config(
        {"name": "a", "decision": "allow", "class": "execute"},
        {"name": "b", "decision": "ask", "class": "execute", "commands": ["make"]},
        network="allow",
    )
    with pytest.raises(ShieldError) as raised:
        Shield(agent, tmp_path, operator=operator)
    assert str(raised.value).count("\n") == 2
