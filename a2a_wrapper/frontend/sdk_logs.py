"""a2a-sdk's log lines about a caller's bad request shown at DEBUG, not as warnings and errors.

A request for an unknown task, with invalid params, to an ended task, for an unknown method, without the
version header or for what the card says the agent does not do (the extended card, push configs while push is off:
the SDK's capability checks, logged at ERROR as "Validation failure") is answered with the protocol's error; it
says nothing about this agent's health. The SDK logs
each such answer at WARNING, and a request it cannot parse at ERROR with a traceback. Those records, and only
those (known by their logger, message template and level), are lowered to DEBUG, traceback kept. The same
templates logged at ERROR for an internal error (-32603, REST 500), and every other record, keep their level.

A task whose state the database's outage kept from being saved is logged by a2a-sdk with the save's traceback,
once per task; the outage is said once already (state/outage.py), so that record is at DEBUG too.
"""

import logging

from a2a_wrapper.state.outage import StateUnavailable

WARNING, ERROR = logging.WARNING, logging.ERROR

# logger -> {message template: the level the SDK gives it for a caller's error} (a2a-sdk 1.3.0)
CALLER_ERRORS: dict[str, dict[str, int]] = {
    "a2a.server.routes.jsonrpc_dispatcher": {
        "Request Error (ID: %s): Code=%s, Message='%s'%s": WARNING,
        "Failed to validate base JSON-RPC request": ERROR,
        "Failed to parse request params": ERROR,
    },
    "a2a.compat.v0_3.jsonrpc_adapter": {"Failed to validate base JSON-RPC request for v0.3": ERROR},
    "a2a.utils.error_handlers": {"Request error: Code=%s, Message='%s'%s": WARNING, "Parse error: %s": WARNING},
    "a2a.utils.version_validator": {"Version mismatch: actual='%s', expected='%s'": WARNING},
    "a2a.server.request_handlers.request_handler": {"Validation failure: %s": ERROR},
}


class CallerErrorsAtDebug(logging.Filter):
    def __init__(self, templates: dict[str, int]) -> None:
        super().__init__()
        self._templates = templates

    def filter(self, record: logging.LogRecord) -> bool:
        if self._templates.get(str(record.msg)) != record.levelno:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)  # the level was checked before: again


class OutageAtDebug(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is None or not isinstance(record.exc_info[1], StateUnavailable):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


OUTAGE_LOGGERS = ("a2a.server.agent_execution.active_task",)  # its consumer's "Failed", with the traceback


def lower_caller_errors() -> None:
    """Puts the filters on each of those SDK loggers, once per process (the loggers are global)."""
    for name, templates in CALLER_ERRORS.items():
        logger = logging.getLogger(name)
        if not any(isinstance(each, CallerErrorsAtDebug) for each in logger.filters):
            logger.addFilter(CallerErrorsAtDebug(templates))
    for name in OUTAGE_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(each, OutageAtDebug) for each in logger.filters):
            logger.addFilter(OutageAtDebug())
