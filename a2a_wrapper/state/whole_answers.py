"""A task as it is kept and shown: each artifact's streamed text chunks joined into one part.

The answer streams as chunks of one artifact (`append`, the last one marked `lastChunk`), and a2a-sdk keeps
every chunk as a part of its own, the closing empty one included. A client that reads a stored task (the
unary reply, GetTask, ListTasks, a subscription's first snapshot) wants the answer, not its chunking: here
adjacent text parts that differ only in their text become one part holding the whole text.
"""

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
    runs: list[list[Part]] = []
    for part in parts:
        if runs and _joinable(runs[-1][-1], part):
            runs[-1].append(part)
        else:
            runs.append([part])
    return [run[0] if len(run) == 1 else _one(run) for run in runs]


def _one(run: list[Part]) -> Part:
    part = Part()
    part.CopyFrom(run[0])
    part.text = "".join(each.text for each in run)  # one join: a long answer of many chunks stays linear
    return part


def _joinable(first: Part, second: Part) -> bool:
    """Both text, and alike in all but the text (media type, filename, metadata)."""
    if first.WhichOneof("content") != "text" or second.WhichOneof("content") != "text":
        return False
    return (first.media_type, first.filename, first.metadata) == (second.media_type, second.filename, second.metadata)
