"""The one table from tool kinds to classes, and which commands destroy."""

import pytest

from a2a_wrapper.backends.copilot.translate import permission_kind
from a2a_wrapper.backends.opencode.translate import tool_kind
from a2a_wrapper.events import Permission
from a2a_wrapper.shield import classify, kind_class
from a2a_wrapper.shield.classes import destructive


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("read", "read"),
        ("search", "read"),
        ("think", "read"),
        ("question", "read"),
        ("external_directory", "read"),
        ("edit", "write"),
        ("write", "write"),
        ("move", "delete"),
        ("delete", "delete"),
        ("execute", "execute"),
        ("fetch", "network"),
        ("mcp", "mcp"),
        ("delegate", "other"),
        ("switch_mode", "other"),
        ("other", "other"),
        ("frobnicate", "other"),  # not a ToolKind (an adapter's bug): other too
        ("", "other"),
        ("Execute", "other"),  # kinds are exact: an unexpected spelling is unknown, so other
    ],
)
def test_kind_class(kind: str, expected: str) -> None:
    assert kind_class(kind) == expected


@pytest.mark.parametrize(
    ("opencode_tool", "expected"),
    [
        ("bash", "execute"),
        ("edit", "write"),
        ("write", "write"),
        ("patch", "write"),
        ("read", "read"),
        ("glob", "read"),
        ("grep", "read"),
        ("list", "read"),
        ("webfetch", "network"),
        ("websearch", "network"),
        ("external_directory", "read"),
        ("task", "other"),
        ("todowrite", "read"),
        ("github_create_issue", "other"),  # an MCP tool named by OpenCode: denied unless a rule allows it
        ("doom_loop", "other"),
    ],
)
def test_opencode_tools_through_the_translator(opencode_tool: str, expected: str) -> None:
    assert kind_class(tool_kind(opencode_tool)) == expected


@pytest.mark.parametrize(("copilot_kind", "expected"), [("shell", "execute"), ("url", "network")])
def test_copilot_permission_kinds_through_the_translator(copilot_kind: str, expected: str) -> None:
    assert kind_class(permission_kind(copilot_kind)) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("rm -rf build", True),
        ("/bin/rm x", True),
        ("RM x", True),
        ("\uff52\uff4d x", True),  # fullwidth
        ("rmdir d", True),
        ("unlink f", True),
        ("shred f", True),
        ("truncate -s 0 f", True),
        ("mv a b", True),
        ("mkfs.ext4 /dev/sda", True),
        ("dd if=/dev/zero of=disk.img", True),
        ("dd if=disk.img", False),
        ("find . -name '*.o' -delete", True),
        ("find . -name '*.o'", False),
        ("tee out.txt", True),
        ("tee -a out.txt", False),
        ("tee", False),
        ("ln -sf a b", True),
        ("ln -s a b", False),
        ("rsync -a --delete src/ dst/", True),
        ("git clean -fdx", True),
        ("git reset --hard HEAD~1", True),
        ("git reset HEAD~1", False),
        ("git checkout -- file.py", True),
        ("git checkout .", True),
        ("git checkout main", False),
        ("git restore file.py", True),
        ("git -C repo clean -f", True),
        ("git -c core.x=y reset --hard", True),
        ("git stash drop", True),
        ("git stash", False),
        ("git branch -D topic", True),
        ("git push --force origin main", True),
        ("git push origin +main", True),
        ("git push origin :topic", True),
        ("git push origin main", False),
        ("git rm file", True),
        ("git status", False),
        ("cp a b", False),
        ("ls -la", False),
        ("", False),
    ],
)
def test_destructive(command: str, expected: bool) -> None:
    assert destructive(command.split()) is expected


@pytest.mark.parametrize(
    ("kind", "command", "expected"),
    [
        ("execute", "ls -la", "execute"),
        ("execute", "ls; rm -rf x", "delete"),
        ("execute", "echo hi > out.txt", "delete"),  # a truncating redirect
        ("execute", "sudo rm -rf x", "delete"),
        ("execute", "bash -c 'git clean -f'", "delete"),
        ("execute", "cat <<EOF", "execute"),  # unparseable: the kind's class (and denied when decided)
        ("read", None, "read"),
        ("execute", "mv a b", "delete"),
        ("frobnicate", None, "other"),
    ],
)
def test_classify(kind: str, command: str | None, expected: str) -> None:
    assert classify(Permission(id="p", kind=kind, tool="tool", command=command)) == expected
