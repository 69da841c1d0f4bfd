"""The project's exception tree.

WrapperError
├── ConfigError            a config file or override that cannot be used
├── InstallError           a backend binary that cannot be found or installed
├── SandboxUnavailable     this machine cannot build the sandbox a backend must run in
├── WorkspaceError         a context's workspace could not be made, read or published (workspaces/git.py)
├── StateUnavailable       the state database (state.url, or the SQLite file in state_dir) cannot be used
└── BackendError           the backend failed; the message is a sentence for the caller
    ├── BackendUnavailable the backend process is down or not reachable
    │   ├── Unauthorized   the backend refused our credentials
    │   └── CallerLimit    every backend the agent may run serves another caller, none of them idle
    ├── NotFound           the backend has no such object (HTTP 404)
    └── SessionGone        the session a turn was sent to no longer exists in the backend
"""

from typing import Any

from pydantic_core import ErrorDetails

SENTENCE = "a2a_wrapper_sentence"  # the type of a validation error whose message already names key and value


class WrapperError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(WrapperError):
    """A config that cannot be used; the message names the file, the key and the value."""


class InstallError(WrapperError):
    """A backend binary that is missing or could not be installed."""


class SandboxUnavailable(WrapperError):
    """bubblewrap is missing or the kernel refuses its namespaces; the message says what to do."""


class StateUnavailable(WrapperError):
    """The agent's state cannot be reached or written; the message names state.url or state_dir, and why."""


class BackendError(WrapperError):
    """The backend reported a failure; the message is meant for the A2A caller."""


class BackendUnavailable(BackendError):
    """The backend process is not running or does not answer."""


class CallerLimit(BackendUnavailable):
    """A new caller's backend would pass `tenants.max_running`, and no running one is idle."""


class NotFound(BackendError):
    """The backend has no such object."""


class Unauthorized(BackendUnavailable):
    """The backend refused our credentials."""


class SessionGone(BackendError):
    """The backend lost the session before the turn started; nothing was sent to the model."""


def describe_invalid(error: ErrorDetails) -> str:
    """What is wrong with one value pydantic refused and the value given, without its key: the one wording of
    every config error (agent files, fleet files, shield rules)."""
    if error["type"] == SENTENCE:
        return error["msg"]
    message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"].removeprefix("Value error, ")
    shown = f" (got {_short(error.get('input'))})" if error["type"] != "missing" and error["loc"] else ""
    return message + shown


def keyed(loc: tuple[int | str, ...] | list[int | str], message: str) -> str:
    """`message` after its dotted key (`backend.workdir: ...`), or alone at the top level."""
    return f"{'.'.join(map(str, loc))}: {message}" if loc else message


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
