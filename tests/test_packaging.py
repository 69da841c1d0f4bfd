"""`pip install .` as a user runs it: the distribution is `a2a-wrap` (PyPI's `a2a-wrapper` is someone else's) and
it gives the `a2a-wrap` command; the import package stays `a2a_wrapper`."""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*argv: str | Path, **env: str) -> str:
    """In the temp folder: `python -c` there must not find this checkout's a2a_wrapper."""
    done = subprocess.run(
        [str(arg) for arg in argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
        cwd=tempfile.gettempdir(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_pip_install_of_the_source_gives_the_a2a_wrap_command(tmp_path: Path) -> None:
    source = tmp_path / "src"  # a copy: the build writes build/ and egg-info next to the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    shutil.copytree(ROOT / "a2a_wrapper", source / "a2a_wrapper", ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)  # a plain venv: nothing of this one's packages is visible in it
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", "--no-deps", source)

    assert (venv / "bin" / "a2a-wrap").is_file()
    found = run(
        python,
        "-c",
        "import importlib.metadata as m; d = m.distribution('a2a-wrap');"
        "print(d.version, *(f'{e.name}={e.value}' for e in d.entry_points if e.group == 'console_scripts'))",
    )
    assert found.split() == ["0.1.0", "a2a-wrap=a2a_wrapper.cli:main"]
    # the dependencies were left out (--no-deps): borrow this venv's, while a2a_wrapper is the installed copy
    deps = sysconfig.get_paths()["purelib"]
    where = run(python, "-c", "import a2a_wrapper; print(a2a_wrapper.__file__)", PYTHONPATH=deps)
    assert where.startswith(str(venv))
    assert "Usage: a2a-wrap" in run(venv / "bin" / "a2a-wrap", "--help", PYTHONPATH=deps)
    plugin = Path(where).parent / "backends" / "opencode" / "plugin"
    assert list(plugin.glob("*.js")), "the OpenCode plugin ships in the package"
