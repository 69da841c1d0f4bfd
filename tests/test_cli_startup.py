"""`a2a-wrap --help`, `send`, `status` answer at once: the CLI loads what a command runs only when it runs.

Checked by what a fresh interpreter has imported after building the CLI, not by a time."""

import subprocess
import sys

HEAVY = (
    "sqlalchemy",
    "a2a",
    "aiohttp",
    "uvicorn",
    "starlette",
    "grpc",
    "docker",
    "a2a_wrapper.config.settings",
    "a2a_wrapper.guard",
    "a2a_wrapper.backends",
    "a2a_wrapper.frontend",
    "a2a_wrapper.sandbox",
)


def loaded_after(code: str) -> set[str]:
    script = f"import sys\n{code}\nprint('\\n'.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    return set(done.stdout.split())


def test_building_the_cli_and_its_help_load_nothing_heavy() -> None:
    code = (
        "from click.testing import CliRunner\n"
        "from a2a_wrapper.cli import main\n"
        "for args in (['--help'], ['send', '--help'], ['status', '--help'], ['deploy', 'kubernetes', '--help']):\n"
        "    assert CliRunner().invoke(main, args).exit_code == 0, args\n"
    )
    loaded = loaded_after(code)
    assert "a2a_wrapper.cli" in loaded
    heavy = sorted(name for name in loaded if any(name == h or name.startswith(h + ".") for h in HEAVY))
    assert heavy == [], f"`a2a-wrap --help` imports {heavy[:10]}"


def test_a_command_still_loads_what_it_runs() -> None:
    """The check above can fail: `schema` needs the config's models and imports them."""
    code = (
        "from click.testing import CliRunner\nfrom a2a_wrapper.cli import main\nCliRunner().invoke(main, ['schema'])\n"
    )
    assert "a2a_wrapper.config.settings" in loaded_after(code)
