"""Whole numbers in JSON metadata and data parts print as integers: `5`, not `5.0`.

A2A carries metadata and data parts as protobuf `Struct`s, which hold every number as a double. Protobuf's
Python printer (`json_format`, which every a2a-sdk JSON binding and push delivery uses) renders a double that
is whole as `5.0`; the Go, Java and C++ printers render `5`. Counts such as `usage.outputTokens` are whole,
so Python's printer is taught the same rule here, once, for the process. Only `Value.number_value` changes:
typed proto fields (int32, timestamps, enums) are printed as before, and a fraction stays a fraction.
"""

from typing import Any

from google.protobuf import json_format

MAX_EXACT = 2**53  # past this a double no longer counts by ones: printed as it is


class _WholeNumberPrinter(json_format._Printer):  # the printer has no public seam
    def _ValueMessageToJsonObject(self, message: Any) -> Any:
        value = super()._ValueMessageToJsonObject(message)
        if type(value) is float and value.is_integer() and abs(value) <= MAX_EXACT:
            return int(value)
        return value


def print_whole_numbers_as_integers() -> None:
    """Installs the rule for every `MessageToDict` / `MessageToJson` of this process; safe to call again."""
    json_format._Printer = _WholeNumberPrinter
