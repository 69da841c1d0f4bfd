"""The reference as a site: docs/ builds with mkdocs --strict (every link, anchor and nav entry resolves), and the
configuration reference is the one the config's models write today."""

import subprocess
import sys
from pathlib import Path

from a2a_wrapper.config.backends import BACKEND_KINDS
from a2a_wrapper.config.reference import reference_markdown
from a2a_wrapper.config.settings import AgentSettings

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "config-reference.md"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "config-reference" / "index.html").is_file()


def test_the_configuration_reference_is_current() -> None:
    assert REFERENCE.read_text() == reference_markdown(), "run: a2a-wrap schema --markdown > docs/config-reference.md"


def test_the_reference_names_every_top_level_key_and_each_backend_kind() -> None:
    text = REFERENCE.read_text()
    for key in AgentSettings.model_fields:
        assert f"| `{key}` |" in text, key
    for kind in BACKEND_KINDS:
        assert f"## `backend (kind: {kind})`" in text, kind
