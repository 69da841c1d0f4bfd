"""An EgressProxy in a process of its own, as the wrapper serves it, under the 1,024 descriptors a process
usually gets, so a test can flood its socket and count the process's descriptors from outside.

    python -m tests.helpers.egress_process SOCKET ENDPOINT_PORT HEAD_TIMEOUT

Allows exactly 127.0.0.1:ENDPOINT_PORT (an endpoint of the config); prints `ready` once listening, then one line
`busy N` each time a connection is refused at the cap (N refused so far); runs until killed.
"""

import asyncio
import resource
import sys
from pathlib import Path

from a2a_wrapper.event_loop import run
from a2a_wrapper.sandbox.egress import Destination, EgressDecision, EgressPolicy, EgressProxy

FILE_LIMIT = 1024


async def serve(socket_path: Path, port: int, head_timeout: float) -> None:
    refused = 0

    async def record(decision: EgressDecision, wait_ms: float) -> None:
        pass

    def busy() -> None:
        nonlocal refused
        refused += 1
        print(f"busy {refused}", flush=True)

    policy = EgressPolicy({Destination("127.0.0.1", port)}, None)
    proxy = EgressProxy(socket_path, policy, record, busy=busy, head_timeout=head_timeout)
    await proxy.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    socket_path, port, head_timeout = sys.argv[1:]
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(FILE_LIMIT, hard), hard))
    run(serve(Path(socket_path), int(port), float(head_timeout)))


if __name__ == "__main__":
    main()
