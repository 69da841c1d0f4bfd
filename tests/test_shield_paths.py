"""Path globs, command globs, and where a path really points (`..` and symlinks resolved)."""

import os
from pathlib import Path

import pytest

from a2a_wrapper.shield.globs import GlobError, check_path_glob, command_matches, escape, path_matches
from a2a_wrapper.shield.paths import Workspace, argument_text
from a2a_wrapper.shield.shell import Word


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("docs/*.md", "/ws/docs/a.md", True),
        ("docs/*.md", "/ws/docs/sub/a.md", False),  # `*` stays inside one folder
        ("docs/**/*.md", "/ws/docs/sub/dir/a.md", True),
        ("docs/**/*.md", "/ws/docs/a.md", True),  # `**` may be no folder at all
        ("docs/*.md", "/elsewhere/docs/a.md", False),  # relative patterns are under the workspace
        ("src/**", "/ws/src/a/b/c.py", True),
        ("src/**", "/ws/srcfoo/a", False),
        ("**/.env", "/ws/.env", True),
        ("**/.env", "/ws/deep/down/.env", True),
        ("**/.env", "/home/u/.env", True),  # `**/` matches anywhere
        ("**/.env", "/ws/.env.example", False),
        ("**/*.pem", "/ws/keys/server.pem", True),
        ("/etc/**", "/etc/passwd", True),
        ("/etc/*", "/etc/ssl/certs/x", False),
        ("*.p[ae]m", "/ws/k.pam", True),
        ("*.p[!a]m", "/ws/k.pam", False),
        ("file?.txt", "/ws/file1.txt", True),
        ("file?.txt", "/ws/file10.txt", False),
        ("a\\*b", "/ws/a*b", True),
        ("a\\*b", "/ws/axb", False),
        ("**", "/anything/at/all", True),
    ],
)
def test_path_glob(pattern: str, path: str, expected: bool) -> None:
    assert path_matches(check_path_glob(pattern), path, "/ws") is expected


def test_folded_path_matching_is_for_deny_rules() -> None:
    assert not path_matches("**/.env", "/ws/.ENV", "/ws")
    assert path_matches("**/.env", "/ws/.ENV", "/ws", folded=True)
    assert path_matches("**/.env", "/ws/\uff0eenv", "/ws", folded=True)  # a fullwidth full stop


def test_a_workspace_path_with_glob_characters_is_literal() -> None:
    assert path_matches("src/*", "/tmp/test[1]/src/a", "/tmp/test[1]")
    assert not path_matches("src/*", "/tmp/test1/src/a", "/tmp/test[1]")


@pytest.mark.parametrize(
    ("pattern", "because"),
    [
        ("[abc", "never closed"),
        ("a/**b", "whole segment"),
        ("../secret", "`..`"),
        ("./src", "`.`"),
        ("a//b", "empty"),
        ("src/", "trailing"),
        ("a\\", "end with"),
        ("", "1 to"),
        ("a\0b", "NUL"),
        ("x" * 2000, "1 to"),
    ],
)
def test_bad_path_globs(pattern: str, because: str) -> None:
    with pytest.raises(GlobError, match=because):
        check_path_glob(pattern)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("git status", "git status", True),
        ("git status", "git status --porcelain", False),
        ("git status *", "git status", True),  # a trailing ` *` also matches the command alone
        ("git status *", "git status --short", True),
        ("ls *", "lsblk", False),
        ("npm test", "npm test; rm", False),
        ("pytest *", "pytest -k 'a b'", True),
        ("a\\*", "a*", True),
        ("a\\*", "ab", False),
        ("*a*a*a*a*a*a*b", "a" * 5000, False),  # no catastrophic backtracking
    ],
)
def test_command_glob(pattern: str, text: str, expected: bool) -> None:
    assert command_matches(pattern, text) is expected


def test_escape_makes_a_literal_pattern() -> None:
    for text in ["ls *.py", "a[1]?", "back\\slash"]:
        assert command_matches(escape(text), text)
        assert not command_matches(escape(text), text + "x")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace with links that point outside it, and an outside folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print()")
    (ws / "dir-link").symlink_to(outside)
    (ws / "file-link").symlink_to(outside / "secret.txt")
    (ws / "src" / "inner-link").symlink_to(ws / "src" / "app.py")
    (ws / "chain").symlink_to(ws / "dir-link")
    (ws / "loop").symlink_to(ws / "loop")
    return ws


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("src/app.py", True),
        ("src/new-file.py", True),  # not there yet: still placed
        ("./src/../src/app.py", True),
        ("src/inner-link", True),
        (".", True),
        ("..", False),
        ("../outside/secret.txt", False),
        ("src/../../outside/secret.txt", False),
        ("./x/../../..", False),
        ("dir-link/secret.txt", False),
        ("dir-link", False),
        ("file-link", False),
        ("chain/secret.txt", False),
        ("dir-link/../outside/secret.txt", False),  # `..` after a link leaves from where the link points
        ("dir-link/../ws/src/app.py", True),  # … which here is back home
        ("/etc/passwd", False),
        ("loop", True),
    ],
)
def test_resolve_and_hold(tree: Path, path: str, inside: bool) -> None:
    workspace = Workspace(tree)
    resolved = workspace.resolve(path, workspace.root)
    assert resolved is not None
    assert workspace.holds(resolved) is inside


@pytest.mark.parametrize("path", ["", "~/x", "~root/x", "a\0b"])
def test_unplaceable_paths(tree: Path, path: str) -> None:
    workspace = Workspace(tree)
    assert workspace.resolve(path, workspace.root) is None


def test_a_relative_path_from_an_unknown_folder_is_unplaced(tree: Path) -> None:
    workspace = Workspace(tree)
    assert workspace.resolve("src/app.py", None) is None
    assert workspace.resolve("/etc/passwd", None) == os.path.realpath("/etc/passwd")


def test_globs_in_arguments_expand_to_what_they_match(tree: Path) -> None:
    workspace = Workspace(tree)
    paths = workspace.word_paths(Word("*", glob=True), "*", [workspace.root])
    assert paths is not None
    assert os.path.realpath(tree.parent / "outside") in paths  # `*` reaches dir-link
    assert not all(workspace.holds(p) for p in paths)


def test_a_workspace_that_is_itself_a_link(tmp_path: Path, tree: Path) -> None:
    (tmp_path / "ws-link").symlink_to(tree)
    workspace = Workspace(tmp_path / "ws-link")
    resolved = workspace.resolve("src/app.py", workspace.root)
    assert resolved is not None and workspace.holds(resolved)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("src/app.py", "src/app.py"),
        ("-la", None),
        ("--file=/etc/passwd", "/etc/passwd"),
        ("-I../include", "../include"),
        ("-n/etc/passwd", "/etc/passwd"),
        ("--", None),
        ("-", "-"),
    ],
)
def test_argument_text(word: str, expected: str | None) -> None:
    assert argument_text(Word(word)) == expected
