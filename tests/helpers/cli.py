"""`a2a-wrap` run as a user runs it (a subprocess in the repository), and what `check` prints read back."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent


def a2a_wrap(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """`prefix`: a command the run goes through (bubblewrap with a folder bound read-only, say)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("A2A_WRAP_") or k == "A2A_WRAP_BACKENDS_DIR"}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "a2a_wrapper", *args],
        env={**clean, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def check_output(stdout: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two JSON documents `check` prints: the effective config and the agent card."""
    config_text, rest = stdout.split("# agent card\n")
    card_text, _rules = rest.split("# permission rules\n")
    return json.loads(config_text.removeprefix("# effective config\n")), json.loads(card_text)
