"""The SDK's own log noise, quieted once: its fallback after `session.sendAndWait` is refused (-32601 on CLI
1.0.102, a harmless version mismatch) is dropped, and the CLI's stderr chatter becomes DEBUG."""

import logging

_JSONRPC = "copilot._jsonrpc"


class _SdkNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "-32601" in message or "sendAndWait" in message:
            return False
        if message.startswith("[CLI] "):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(_JSONRPC).isEnabledFor(logging.DEBUG)
        return True


def quiet_sdk_logs() -> None:
    logger = logging.getLogger(_JSONRPC)
    if not any(isinstance(existing, _SdkNoise) for existing in logger.filters):
        logger.addFilter(_SdkNoise())
