"""The boundary holds for a user without root too: the trusted-plane and sandbox tests run again as `nobody`.

CI runs as root; people do not. Run as root, this test starts pytest on those two files as an unprivileged
user (setpriv), with a HOME of its own and a copy of the managed backends it can read (root's data folder is
not readable to others), and passes only if every one of them passes there. The interpreter is the system's
(a root-installed Python, a pyenv's under /root, is not the user's to run), with this environment's packages.
"""

import os
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a_wrapper.backends.install import backends_dir

SYSTEM_PYTHON = Path("/usr/bin/python3")
pytestmark = [
    pytest.mark.alone,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="run as root, it reruns the boundary tests as an unprivileged user"),
    pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="no system Python for the unprivileged user"),
    pytest.mark.timeout(1800),
]

REPO = Path(__file__).resolve().parent.parent
NOBODY = 65534
SUITES = [  # the trusted plane whole; of the older sandbox suite, its first promise (CI's time)
    "tests/test_trusted_plane.py",
    "tests/test_sandbox_boundary.py::test_writes_outside_the_workspace_do_not_reach_the_disk",
]


def _owned_by_nobody(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for folder, _, files in os.walk(path):
        os.chown(folder, NOBODY, NOBODY)
        for name in files:
            os.chown(os.path.join(folder, name), NOBODY, NOBODY, follow_symlinks=False)
    return path


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder the unprivileged user can reach (pytest's own are root's alone), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="a2a-wrap-unprivileged-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_boundary_tests_pass_as_an_unprivileged_user(shared_folder: Path) -> None:
    home = _owned_by_nobody(shared_folder / "home")
    backends = shared_folder / "backends"
    shutil.copytree(backends_dir(), backends, symlinks=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "TMPDIR": str(home),
        "A2A_WRAP_BACKENDS_DIR": str(backends),
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]),
    }
    # OpenCode and Copilot (the ACP variants run the same programs under the same sandbox as root): CI's time
    selected = ["-k", "not acp", f"--basetemp={home / 'pytest'}", *SUITES]
    command = [str(SYSTEM_PYTHON), "-m", "pytest", "-q", "-x", *selected]
    setpriv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    ran = subprocess.run([*setpriv, *command], cwd=REPO, env=env, capture_output=True, text=True, timeout=1700)
    summary = ran.stdout.strip().rpartition("\n")[2]
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
