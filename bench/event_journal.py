"""What giving every streamed event an id costs: the journal's record of an event and the lookup as it leaves.

Each event a2a-sdk publishes is recorded by the journal (state/event_journal.py: on SQLite kept in memory; on
PostgreSQL only its position, as the SDK has written the event to `task_events` already), then looked up by
identity when the request handler stamps it (frontend/handler/resumable_streams.py), and on gRPC copied to carry
the id in its metadata. This times those steps for turns of `--chunks` artifact chunks, on the loop, with a
stream lagging `--lag` events behind its task (the lookup searches newest first). The end-to-end figure for a
whole turn is `bench/cpu_ab.py` between a checkout without the journal and one with it.

    .venv/bin/python bench/event_journal.py [--turns 200] [--chunks 300] [--lag 8]
"""

import argparse
import asyncio
import sys
import time

from a2a.server.cluster import TaskVersion, VersionedEvent
from a2a.types import Artifact, Part, TaskArtifactUpdateEvent

from a2a_wrapper.state.event_journal import LocalJournal


def chunks(task_id: str, count: int) -> list[TaskArtifactUpdateEvent]:
    return [
        TaskArtifactUpdateEvent(
            task_id=task_id,
            context_id="bench",
            artifact=Artifact(artifact_id="response", name="response", parts=[Part(text=f"word{i} ")]),
            append=i > 0,
        )
        for i in range(count)
    ]


async def timed(turns: int, count: int, lag: int) -> tuple[float, float, float]:
    """µs of CPU per event (this thread's, so other processes' load does not count): recorded; recorded and looked
    up by a stream `lag` events behind; copied with its id in the metadata. Each is timed over a turn at once."""
    journal = LocalJournal()
    record = both = copy = 0.0
    for turn in range(turns):
        recorded_only, looked_up = f"task-{turn}", f"task-{turn}-streamed"
        events, streamed = chunks(recorded_only, count), chunks(looked_up, count)
        start = time.thread_time()
        for event in events:
            await journal.publish(recorded_only, VersionedEvent(event=event, version=TaskVersion.MISSING))
        recorded = time.thread_time()
        for index, event in enumerate(streamed):
            await journal.publish(looked_up, VersionedEvent(event=event, version=TaskVersion.MISSING))
            if index >= lag:
                journal.position_of(looked_up, streamed[index - lag])
        looked = time.thread_time()
        for event in events:
            stamped = TaskArtifactUpdateEvent()
            stamped.CopyFrom(event)
            stamped.metadata["a2a-wrapper/event-id"] = f"{recorded_only}:1"
        copied = time.thread_time()
        record += recorded - start
        both += looked - recorded
        copy += copied - looked
    events_timed = turns * count
    return record * 1e6 / events_timed, (both - record) * 1e6 / events_timed, copy * 1e6 / events_timed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="turns (tasks) timed (default 200)")
    parser.add_argument("--chunks", type=int, default=300, help="artifact chunks a turn (default 300)")
    parser.add_argument("--lag", type=int, default=8, help="events a stream is behind its task (default 8)")
    args = parser.parse_args(argv)
    record, lookup, copy = asyncio.run(timed(args.turns, args.chunks, args.lag))
    print(f"per event, µs: recorded {record:.2f}, looked up {lookup:.2f}; on gRPC copied with its id {copy:.2f}")
    per_turn = (record + lookup) * args.chunks / 1000
    print(
        f"a turn of {args.chunks} chunks: {per_turn:.3f} ms (SSE), {per_turn + copy * args.chunks / 1000:.3f} ms (gRPC)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
