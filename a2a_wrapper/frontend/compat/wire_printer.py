"""The process's protobuf JSON printer: whole numbers print as integers, and each message type is planned once.

Every a2a-sdk JSON binding, push delivery and the task rows print protobuf messages with `json_format`'s
`_Printer` (`MessageToDict` / `MessageToJson`), which the class below replaces, once, for the process
(`install`). The printer has no public seam; the two changes:

- Whole numbers. A2A carries metadata and data parts as protobuf `Struct`s, which hold every number as a
  double. Python's printer renders a double that is whole as `5.0`; the Go, Java and C++ printers render `5`.
  Counts such as `usage.outputTokens` are whole, so the same rule holds here. Only `Value.number_value`
  changes: typed proto fields (int32, timestamps, enums) print as before, and a fraction stays a fraction.
- Plans. For every field of every message, the stock printer asks again what kind the field is, what its JSON
  name is, whether it is a map entry, and how an enum value is named: on a trivial turn that was 86 us of CPU
  for each event a stream sends, and the task row's conversion much the same. Here those answers are kept per
  message type (a plan: each field's JSON name and converter) and a message's set fields are converted by
  them; a well-known type goes straight to its method, and `Struct`, `Value` and `ListValue` are read directly.
  What a plan does not cover takes the stock printer's own path: wrapper types, extensions, floats, an enum
  number without a name, and the printer's options but `preserving_proto_field_name`. tests/test_wire_printer.py
  holds the output to the stock printer's, for every A2A type.
"""

import base64
import math
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

MAX_EXACT = 2**53  # past this a double no longer counts by ones: printed as it is

Convert = Callable[[Any, Any], Any]  # (printer, value) -> its JSON
Plan = dict[FieldDescriptor, tuple[str, Convert]]
_STOCK = json_format._Printer  # the printer this one stands in for
_UNPLANNED: Any = object()
_F = FieldDescriptor


class WirePrinter(_STOCK):  # type: ignore[misc,valid-type]
    # per message type and name style: its fields' names and converters, a well-known type's method, or None
    _plans: dict[tuple[Descriptor, bool], Plan | Convert | None] = {}

    def _MessageToJsonObject(self, message: Any) -> Any:
        if self.always_print_fields_with_no_presence or self.use_integers_for_enums or self.unquote_int64_if_possible:
            return super()._MessageToJsonObject(message)
        key = (message.DESCRIPTOR, self.preserving_proto_field_name)
        plan = self._plans.get(key, _UNPLANNED)
        if plan is _UNPLANNED:
            plan = self._planned(key)
        if plan is None:
            return super()._MessageToJsonObject(message)
        if not isinstance(plan, dict):  # a well-known type: its own method, as the stock dispatch would call it
            return plan(self, message)
        js = {}
        field = None
        try:
            for field, value in message.ListFields():
                planned = plan.get(field)
                if planned is None:  # an extension: the stock printer names and converts it
                    return super()._MessageToJsonObject(message)
                name, convert = planned
                js[name] = convert(self, value)
        except ValueError as e:
            name = field.name if field is not None else "?"
            raise json_format.SerializeToJsonError(f"Failed to serialize {name} field: {e}.") from e
        return js

    def _planned(self, key: tuple[Descriptor, bool]) -> Plan | Convert | None:
        descriptor, by_proto_name = key
        plan: Plan | Convert | None = None  # a wrapper type: the stock path
        if descriptor.full_name in json_format._WKTJSONMETHODS:
            plan = getattr(type(self), json_format._WKTJSONMETHODS[descriptor.full_name][0])
        elif not json_format._IsWrapperMessage(descriptor):
            plan = {
                field: (field.name if by_proto_name else field.json_name, self._field_converter(field))
                for field in descriptor.fields
            }
        self._plans[key] = plan
        return plan

    def _field_converter(self, field: FieldDescriptor) -> Convert:
        if json_format._IsMapEntry(field):
            value_of = self._value_converter(field.message_type.fields_by_name["value"])
            return lambda printer, entries: {_map_key(k): value_of(printer, entries[k]) for k in entries}
        single = self._value_converter(field)
        if field.is_repeated:
            return lambda printer, values: [single(printer, v) for v in values]
        return single

    def _value_converter(self, field: FieldDescriptor) -> Convert:
        cpp = field.cpp_type
        if cpp == _F.CPPTYPE_MESSAGE:
            return _message
        if cpp == _F.CPPTYPE_ENUM:
            return self._enum_converter(field)
        if cpp == _F.CPPTYPE_STRING:
            return _bytes if field.type == _F.TYPE_BYTES else _same
        if cpp in (_F.CPPTYPE_BOOL, _F.CPPTYPE_INT32, _F.CPPTYPE_UINT32):
            return _same
        if cpp in (_F.CPPTYPE_INT64, _F.CPPTYPE_UINT64):
            return _text
        return lambda printer, value: _STOCK._FieldToJsonObject(printer, field, value)  # floats: infinities, NaN

    def _enum_converter(self, field: FieldDescriptor) -> Convert:
        enum = field.enum_type
        if enum.full_name == "google.protobuf.NullValue":
            return lambda printer, value: None
        names = {}
        for number, value in enum.values_by_number.items():
            option = self._GetJsonEnumValueOption(value)
            names[number] = option.string if option is not None else value.name

        def convert(printer: Any, number: int) -> Any:
            if number in names:
                return names[number]
            return _STOCK._FieldToJsonObject(printer, field, number)  # unknown: the stock error, or the number

        return convert

    def _StructMessageToJsonObject(self, message: Any) -> Any:
        fields = message.fields
        return {key: self._ValueMessageToJsonObject(fields[key]) for key in fields}

    def _ListValueMessageToJsonObject(self, message: Any) -> Any:
        return [self._ValueMessageToJsonObject(value) for value in message.values]

    def _ValueMessageToJsonObject(self, message: Any) -> Any:
        which = message.WhichOneof("kind")
        if which == "string_value":
            return message.string_value
        if which == "number_value":
            value = message.number_value
            if math.isinf(value) or math.isnan(value):
                return super()._ValueMessageToJsonObject(message)  # the stock error: it would parse as a string
            if value.is_integer() and abs(value) <= MAX_EXACT:
                return int(value)
            return value
        if which == "bool_value":
            return message.bool_value
        if which == "struct_value":
            return self._StructMessageToJsonObject(message.struct_value)
        if which == "list_value":
            return self._ListValueMessageToJsonObject(message.list_value)
        return None  # null_value, or nothing set: null, as the stock printer prints it


def _message(printer: Any, value: Any) -> Any:
    return printer._MessageToJsonObject(value)


def _same(printer: Any, value: Any) -> Any:
    return value


def _text(printer: Any, value: Any) -> Any:
    return str(value)


def _bytes(printer: Any, value: bytes) -> str:
    return base64.b64encode(value).decode("utf-8")


def _map_key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def install() -> None:
    """Makes this the printer of every `MessageToDict` / `MessageToJson` of the process; safe to call again."""
    json_format._Printer = WirePrinter
