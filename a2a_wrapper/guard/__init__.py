"""The outbound guard: credentials redacted and injection-shaped text flagged before anything leaves.

Pure functions and small stateful scanners; the server decides where to apply them.

- `redact(text)`, `redact_value(obj)` (`redact_item` for one of its items), `RedactingFilter`: credentials in
  text, JSON-like data, log records.
- `StreamRedactor`: the same for a stream of text deltas, with the same output whatever the chunking.
- `scan(text)`, `InjectionScanner`: injection-shaped phrases and hidden characters; `GuardVerdict.judge()`
  applies the `warn` / `block` policy.
- `GuardSettings`: the `guard:` config section.
"""

from .injection import GuardVerdict, InjectionFinding, InjectionScanner, Mode, scan
from .secrets import Finding, RedactingFilter, redact, redact_item, redact_value
from .settings import GuardSettings
from .stream import StreamRedactor

__all__ = [
    "Finding",
    "GuardSettings",
    "GuardVerdict",
    "InjectionFinding",
    "InjectionScanner",
    "Mode",
    "RedactingFilter",
    "StreamRedactor",
    "redact",
    "redact_item",
    "redact_value",
    "scan",
]
