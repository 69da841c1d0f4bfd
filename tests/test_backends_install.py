"""`a2a-wrap backends install` as a user runs it: progress on stderr, one `KIND: BINARY` line per backend on stdout."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from a2a_wrapper.backends.install import PINNED

pytestmark = pytest.mark.slow


def a2a_wrap(*args: str, backends: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "A2A_WRAP_BACKENDS_DIR"}
    if backends is not None:
        env["A2A_WRAP_BACKENDS_DIR"] = str(backends)
    done = subprocess.run(
        [sys.executable, "-m", "a2a_wrapper", *args], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_installed_backends_are_kept_and_said_so_at_once() -> None:
    started = time.monotonic()
    done = a2a_wrap("backends", "install")
    assert time.monotonic() - started < 20, "nothing is downloaded again"
    for kind, pinned in PINNED.items():
        assert f"{kind}: {pinned.package}@{pinned.version} already installed in " in done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines] == list(PINNED)
    for line in lines:
        assert os.access(line.split(": ", 1)[1], os.X_OK), line


def test_an_install_says_what_where_how_far_and_how_long(tmp_path: Path) -> None:
    pinned = PINNED["copilot"]  # the smaller one
    spec = f"{pinned.package}@{pinned.version}"
    done = a2a_wrap("backends", "install", "copilot", backends=tmp_path)

    progress = done.stderr.splitlines()
    assert (
        progress[0]
        == f"copilot: installing {spec} (about {pinned.megabytes} MB) from the npm registry into {tmp_path}/copilot"
    )
    assert any(line.startswith("copilot: npm: added ") for line in progress), done.stderr
    last = progress[-1]
    assert last.startswith(f"copilot: installed {spec} (") and " MB) in " in last and " s: " in last, last
    megabytes = int(last.split("(")[1].split(" MB")[0])
    assert pinned.megabytes / 2 < megabytes < pinned.megabytes * 2, "the expected size it announces is about right"

    binary = done.stdout.removeprefix("copilot: ").strip()
    assert done.stdout == f"copilot: {binary}\n" and binary.startswith(str(tmp_path))
    assert a2a_wrap("backends", "path", "copilot", backends=tmp_path).stdout == binary + "\n", "one path, for scripts"
    again = a2a_wrap("backends", "install", "copilot", backends=tmp_path)
    assert again.stderr == f"copilot: {spec} already installed in {tmp_path}/copilot\n"
    assert again.stdout == done.stdout
