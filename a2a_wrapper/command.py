"""`a2a-wrap` as the user can type it again, from any folder: in the demo's advice and in a lock's holder line."""

import shlex
import shutil
import sys
from pathlib import Path


def command_prefix() -> str:
    """The bare name only when PATH finds this very script; else the script's absolute path (a venv that is not
    activated); else this interpreter with `-m` (`python -m a2a_wrapper`)."""
    script = Path(sys.argv[0])
    if script.name == "a2a-wrap" and script.is_file():
        found = shutil.which("a2a-wrap")
        if found is not None and Path(found).resolve() == script.resolve():
            return "a2a-wrap"
        return shlex.quote(str(script.absolute()))
    return f"{shlex.quote(sys.executable)} -m a2a_wrapper"


def this_command() -> str:
    """The command line this process runs, e.g. `a2a-wrap demo --port 8810`."""
    return " ".join([command_prefix(), *map(shlex.quote, sys.argv[1:])])
