"""The tripwire for frontend/compat/: each change to another library's code is for the exact version installed, and
on any other version nothing of that library's is replaced.

A pin moved in pyproject.toml fails the first test until the override has been looked at again (its module's own
tests hold its behaviour to the library's) and its `written_for` moved with the pin."""

import json
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from a2a_wrapper.frontend.compat import OVERRIDES, Override, mismatches


@pytest.mark.parametrize("override", OVERRIDES, ids=lambda override: override.module)
def test_each_override_was_written_for_the_installed_version(override: Override) -> None:
    assert mismatches(override) == [], f"frontend/compat/{override.module}.py: look at it again, then move its pins"
    project = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    for distribution, wanted in override.written_for:  # and the project pins it, so that nobody gets another version
        pin = rf'"{re.escape(distribution)}(\[[^\]]*\])?=={re.escape(wanted)}"'
        assert re.search(pin, project), f"pyproject.toml does not pin {distribution}=={wanted}"


def _replaced_after(installed: str) -> dict[str, bool]:
    """In a fresh interpreter: for each object an override replaces, whether `install` replaced it, with every
    library reported at version `installed` ("" for the real versions)."""
    script = f"""
import importlib, json
from a2a_wrapper.frontend import compat
def resolve(target):
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)
targets = [t for o in compat.OVERRIDES for t in o.replaces]
before = {{t: resolve(t) for t in targets}}
compat.install(**({{"installed": lambda _name: {installed!r}}} if {installed!r} else {{}}))
print(json.dumps({{t: resolve(t) is not before[t] for t in targets}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_on_another_version_the_librarys_own_code_stays() -> None:
    replaced = _replaced_after("0.0.1")
    assert replaced and not any(replaced.values()), replaced


def test_on_the_pinned_versions_every_override_is_installed() -> None:
    """The check above can fail: with the real versions every target is replaced."""
    replaced = _replaced_after("")
    assert all(replaced.values()), replaced


def test_a_mismatch_says_what_and_which_version() -> None:
    override = OVERRIDES[0]
    said = mismatches(override, lambda name: "9.9" if name == "a2a-sdk" else version(name))
    assert said == ["a2a-sdk is 9.9, not 1.3.0"]
    assert mismatches(override, lambda _name: None) == ["a2a-sdk is not installed, not 1.3.0"]
