"""Every layer of the agent's over a2a-sdk 1.3.0's own code, installed in one call: how it prints the wire
(wire_printer.py, sdk_json.py), answers streams (edge/event_stream_response.py), queues, dispatches and checks a
task's events (sdk_queues.py, sdk_dispatch.py, sdk_validation.py), and marks A2A 0.3's pauses final
(sdk_v03_final.py). Each replaces a name of the SDK's for the whole process, so installing them again changes
nothing: the app and the request handler both install them (frontend/app.py), and bench/sdk_floor.py measures the
SDK with them.
"""

from a2a_wrapper.frontend import wire_printer
from a2a_wrapper.frontend.edge.event_stream_response import use_event_streams
from a2a_wrapper.frontend.sdk_dispatch import use_direct_dispatch
from a2a_wrapper.frontend.sdk_json import use_fast_json
from a2a_wrapper.frontend.sdk_queues import use_loop_queues
from a2a_wrapper.frontend.sdk_v03_final import use_v03_final_at_pauses
from a2a_wrapper.frontend.sdk_validation import use_planned_validation


def use_sdk_layers() -> None:
    wire_printer.install()
    use_fast_json()
    use_event_streams()
    use_loop_queues()
    use_direct_dispatch()
    use_planned_validation()
    use_v03_final_at_pauses()
