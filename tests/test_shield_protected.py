"""Files that make code run outside any tool call are never written, whatever the rules or a person say."""

from pathlib import Path

import pytest

from a2a_wrapper.events import Permission
from a2a_wrapper.shield import Shield
from a2a_wrapper.shield.rules import Rule, ShieldConfig

EVERYTHING_ALLOWED = ShieldConfig.model_validate(
    {
        "defaults": {c: "allow" for c in ("read", "write", "delete", "execute", "network", "mcp", "other")},
        "rules": [{"name": "write-anything", "decision": "allow", "class": "write", "workspace": "any"}],
    }
)


@pytest.mark.parametrize(
    ("kind", "tool", "path", "command"),
    [
        ("edit", "edit", ".git/config", None),
        ("write", "write", ".git/hooks/post-checkout", None),
        ("write", "write", "pkg/.git/hooks/pre-commit", None),
        ("write", "write", ".opencode/plugin/run.js", None),
        ("write", "write", "opencode.json", None),
        ("edit", "edit", "sub/opencode.jsonc", None),
        ("write", "create", ".github/hooks/hooks.json", None),
        ("execute", "bash", None, "echo '[core] fsmonitor = touch pwned' >> .git/config"),
        ("execute", "bash", None, "cp evil.js .opencode/plugin/evil.js"),
        ("execute", "bash", None, "rm .git/hooks/pre-push"),
        ("execute", "bash", None, "mv .git elsewhere"),
        ("write", "write", ".git/commondir", None),
        ("write", "write", "sub/.GIT/config", None),
        ("write", "write", "vendor/.git", None),
        ("write", "write", ".gitmodules", None),
        ("write", "write", ".gitattributes", None),
        ("write", "write", ".vscode/tasks.json", None),
        ("write", "write", ".claude/settings.json", None),
        ("write", "write", ".mcp.json", None),
        ("write", "write", ".husky/pre-commit", None),
        ("write", "write", ".envrc", None),
    ],
)
def test_no_rule_and_no_always_opens_them(
    tmp_path: Path, kind: str, tool: str, path: str | None, command: str | None
) -> None:
    request = Permission(id="p", kind=kind, tool=tool, paths=(str(tmp_path / path),) if path else (), command=command)
    shield = Shield(EVERYTHING_ALLOWED, tmp_path)
    always = Rule(name="always-1", decision="allow", class_=("write", "delete", "execute"), workspace="any")
    for deciding in (shield, shield.for_context([always])):
        decision = deciding.decide(request)
        assert (decision.outcome, decision.rule) == ("deny", "built-in:code-outside-tool-calls")
        assert "outside any tool call" in decision.reason


@pytest.mark.parametrize(
    "path", [".git/config", ".opencode/plugin/run.js", "docs/git-config.md", ".gitignore", "AGENTS.md", "CLAUDE.md"]
)
def test_reading_them_and_writing_their_neighbours_is_up_to_the_rules(tmp_path: Path, path: str) -> None:
    shield = Shield(EVERYTHING_ALLOWED, tmp_path)
    assert shield.decide(Permission(id="p", kind="read", tool="read", paths=(str(tmp_path / path),))).outcome == "allow"
    if not path.startswith((".git/", ".opencode/")):
        assert (
            shield.decide(Permission(id="p", kind="write", tool="write", paths=(str(tmp_path / path),))).outcome
            == "allow"
        )
