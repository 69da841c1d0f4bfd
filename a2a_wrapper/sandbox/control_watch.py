"""The workspace's control files watched across turns: a snapshot when turns start, a repair when each ends.

Turns of several contexts may run at once in the one workspace. The snapshot is taken when a turn starts with
no other running, and every turn that ends before they all have is compared with it: a file one turn planted
is removed at the end of whichever turn ends first, and never becomes the starting point of another. Once no
turn runs the snapshot is dropped, so what the owner changes between turns is theirs: the next snapshot starts
from it. Each repair is written to the audit, one row per path.
"""

import asyncio
import logging
import time
from pathlib import Path

from a2a_wrapper.sandbox.control_files import Repair, Snapshot, repair, snapshot
from a2a_wrapper.state.audit import AuditEntry, AuditLog

log = logging.getLogger(__name__)

RULE = "built-in:code-outside-tool-calls"  # the shield's rule for the same files (shield/protected.py)


class ControlWatch:
    def __init__(self, workdir: Path, agent: str, audit: AuditLog | None) -> None:
        self._root = workdir
        self._agent = agent
        self._audit = audit
        self._lock = asyncio.Lock()  # one walk at a time: a repair must not race a snapshot
        self._running = 0
        self._start: Snapshot | None = None

    async def begin(self) -> None:
        """A turn starts: the snapshot its end is compared with (taken now unless another turn runs)."""
        async with self._lock:
            if self._running == 0:
                self._start = await asyncio.to_thread(snapshot, self._root)
            self._running += 1

    async def end(self, context_id: str, task_id: str, caller: str) -> Repair:
        """A turn ended (completed, failed or canceled): control files put back as the snapshot found them."""
        async with self._lock:
            assert self._start is not None and self._running > 0, "end() without begin()"
            self._running -= 1
            start = self._start
            if self._running == 0:
                self._start = None
            done = await asyncio.to_thread(self._repair, start)
        if done:
            log.warning("[%s] after task %s: %s", self._agent, task_id, done.sentence())
            await self._record(done, context_id, task_id, caller)
        return done

    def _repair(self, start: Snapshot) -> Repair:
        try:
            return repair(self._root, start, snapshot(self._root))
        except OSError as exc:  # the workspace itself gone or unreadable: said, never a turn without its end
            return Repair(failed=[f"the workspace {self._root} could not be read: {exc.strerror or exc}"])

    async def _record(self, done: Repair, context_id: str, task_id: str, caller: str) -> None:
        if self._audit is None:
            return
        rows = [(path, "removed") for path in done.removed] + [(path, "restored") for path in done.restored]
        rows += [(sentence, "not repaired") for sentence in done.failed]
        for target, what in rows:
            entry = AuditEntry(
                time=time.time(),
                agent=self._agent,
                context_id=context_id,
                task_id=task_id,
                caller=caller,
                tool="control-files",
                cls="write",
                target=target,
                decision="deny",
                rule=f"{RULE}:{what}",
                decided_by="after-turn scan",
                wait_ms=0.0,
            )
            await self._audit.record(entry)
