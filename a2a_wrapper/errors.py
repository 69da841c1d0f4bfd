"""The project's exception tree.

WrapperError
├── ConfigError            a config file or override that cannot be used
├── InstallError           a backend binary that cannot be found or installed
├── SandboxUnavailable     this machine cannot build the sandbox a backend must run in
└── BackendError           the backend failed; the message is a sentence for the caller
    ├── BackendUnavailable the backend process is down or not reachable
    │   └── Unauthorized   the backend refused our credentials
    ├── NotFound           the backend has no such object (HTTP 404)
    └── SessionGone        the session a turn was sent to no longer exists in the backend
"""


class WrapperError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(WrapperError):
    """A config that cannot be used; the message names the file, the key and the value."""


class InstallError(WrapperError):
    """A backend binary that is missing or could not be installed."""


class SandboxUnavailable(WrapperError):
    """bubblewrap is missing or the kernel refuses its namespaces; the message says what to do."""


class BackendError(WrapperError):
    """The backend reported a failure; the message is meant for the A2A caller."""


class BackendUnavailable(BackendError):
    """The backend process is not running or does not answer."""


class NotFound(BackendError):
    """The backend has no such object."""


class Unauthorized(BackendUnavailable):
    """The backend refused our credentials."""


class SessionGone(BackendError):
    """The backend lost the session before the turn started; nothing was sent to the model."""
