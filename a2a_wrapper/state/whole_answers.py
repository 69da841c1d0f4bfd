"""A task as it is kept and shown: each artifact's streamed text chunks joined into one part.

The answer streams as chunks of one artifact (`append`, the last one marked `lastChunk`), and a2a-sdk keeps
every chunk as a part of its own, the closing empty one included. A client that reads a stored task (the
unary reply, GetTask, ListTasks, a subscription's first snapshot) wants the answer, not its chunking: here
adjacent text parts that differ only in their text become one part holding the whole text.
"""

from itertools import groupby

from a2a.types import Artifact, Part, Task


def whole_answers(task: Task) -> Task:
    """The task with each artifact's adjacent text parts joined; the same object when nothing was split."""
    if not any(_split(artifact) for artifact in task.artifacts):
        return task
    copy = Task()
    copy.CopyFrom(task)
    for artifact in copy.artifacts:
        if _split(artifact):
            joined = _joined(list(artifact.parts))
            del artifact.parts[:]
            artifact.parts.extend(joined)
    return copy


def _split(artifact: Artifact) -> bool:
    parts = artifact.parts
    return any(_joinable(parts[i - 1], parts[i]) for i in range(1, len(parts)))


def _joined(parts: list[Part]) -> list[Part]:
    runs = [list(run) for _, run in groupby(parts, key=_likeness)]
    return [run[0] if len(run) == 1 else _one(run) for run in runs]


def _one(run: list[Part]) -> Part:
    part = Part()
    part.CopyFrom(run[0])
    part.text = "".join(each.text for each in run)  # one join: a long answer of many chunks stays linear
    return part


def _joinable(first: Part, second: Part) -> bool:
    return _likeness(first) == _likeness(second)


def _likeness(part: Part) -> object:
    """Equal for text parts alike in all but the text (media type, filename, metadata); unique for any other part."""
    if part.WhichOneof("content") != "text":
        return object()
    metadata = part.metadata.SerializeToString(deterministic=True) if part.HasField("metadata") else b""
    return (part.media_type, part.filename, metadata)
