"""The Copilot CLI's program folder: unpacked by the wrapper once per binary, or the start fails with a sentence.
The real CLI's unpacking runs in every Copilot test (and the red team's class 2); these are the ways it fails."""

import os
from pathlib import Path

import pytest

from a2a_wrapper.backends.copilot.program import folder_for, unpacked
from a2a_wrapper.errors import BackendUnavailable


def loader(tmp_path: Path, script: str) -> Path:
    """A stand-in `copilot` whose extract-only mode does what `script` does."""
    binary = tmp_path / "bin" / "copilot"
    binary.parent.mkdir(exist_ok=True)
    binary.write_text(f"#!/bin/sh\n{script}\n")
    binary.chmod(0o755)
    return binary


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


async def test_the_package_the_loader_unpacked_is_run_from_the_wrappers_folder(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    unpack = (
        'p="$COPILOT_PKG_CACHE_HOME/pkg/linux-x64/9.9.9"; mkdir -p "$p"; touch "$p/index.js" "$p/.extraction-complete"'
    )
    binary = loader(tmp_path, f'echo run >> {runs}; [ "$COPILOT_SEA_EXTRACT_ONLY" = 1 ] && {unpack}')
    program = await unpacked(binary)
    assert program.folder == folder_for(binary) and program.folder.is_relative_to(tmp_path / "cache")
    assert program.dist == program.folder / "pkg" / "linux-x64" / "9.9.9"
    folders = {"COPILOT_PKG_CACHE_HOME": str(program.folder), "COPILOT_CLI_DIST_DIR": str(program.dist)}
    assert program.env() == folders | {"COPILOT_AUTO_UPDATE": "false"}
    assert await unpacked(binary) == program
    assert runs.read_text() == "run\n", "unpacked once: the next start finds it"


async def test_a_changed_binary_gets_a_folder_of_its_own(tmp_path: Path) -> None:
    binary = loader(tmp_path, "exit 0")
    before = folder_for(binary)
    os.utime(binary, ns=(0, 10**9))
    assert folder_for(binary) != before


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("exit 0", "unpacked no complete package"),
        ('mkdir -p "$COPILOT_PKG_CACHE_HOME/pkg/linux-x64/1.0.0"; touch "$_/index.js"', "unpacked no complete package"),
        ("echo 'no space left' >&2; exit 1", "could not unpack its package into .*: no space left"),
    ],
    ids=["nothing", "no marker", "failed"],
)
async def test_a_package_not_unpacked_whole_stops_the_start_with_a_sentence(
    tmp_path: Path, script: str, said: str
) -> None:
    with pytest.raises(BackendUnavailable, match=said):
        await unpacked(loader(tmp_path, script))
