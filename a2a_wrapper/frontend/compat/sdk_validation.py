"""a2a-sdk's check of a request's REQUIRED fields, with what to check planned once per message type.

Before every request method runs, a2a-sdk 1.3.0 (`proto_utils.validate_proto_required_fields`) walks the request
and every message in it, and for each field of each asks the field's options, by reflection, whether it is
REQUIRED: 125 us of CPU for a one-part SendMessageRequest, on the path of every message. Which fields are
REQUIRED, and which hold messages to walk into, depends on the message type alone: here it is found once per
type, and each request is walked by that plan, with the SDK's own checks and its own recursion, so the errors
(their fields, messages and order) are the SDK's. tests/test_sdk_validation.py holds them to the SDK's.
"""

from functools import cache

from a2a.utils import proto_utils
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

SDK_CHECK = proto_utils._validate_proto_required_fields_internal  # the walk this one stands in for

# per field worth a look: the field, whether it is REQUIRED, whether it holds messages
Plan = tuple[tuple[FieldDescriptor, bool, bool], ...]


@cache
def _plan(descriptor: Descriptor) -> Plan:
    planned = []
    for field in descriptor.fields:
        required = proto_utils.FieldBehavior.REQUIRED in field.GetOptions().Extensions[proto_utils.field_behavior]
        nested = field.type == FieldDescriptor.TYPE_MESSAGE
        if required or nested:
            planned.append((field, required, nested))
    return tuple(planned)


def missing_required_fields(message: Message) -> list[proto_utils.ValidationDetail]:
    """What the SDK's walk finds, in its order: a field's own violation, then those inside it."""
    errors: list[proto_utils.ValidationDetail] = []
    for field, required, nested in _plan(message.DESCRIPTOR):
        if required and (violation := proto_utils._check_required_field_violation(message, field)):
            errors.append(violation)
        if nested:
            errors.extend(proto_utils._recurse_validation(message, field))  # it comes back here for each one
    return errors


def use_planned_validation() -> None:
    """From now on the SDK's required-field checks walk by the plans (the SDK calls its walk by module name)."""
    proto_utils._validate_proto_required_fields_internal = missing_required_fields  # type: ignore[assignment]
