"""Live turns: a backend turn and its A2A side, alive across the requests of one task.

One turn at a time per caller's context (`ContextLocks`): a second message waits until the running turn ends,
which may be in a later request when the turn paused for a person. A turn runs within its budget (time waiting
for a person does not count), and a session the backend lost is reopened once. A pause for a person ends the
request in `input-required`; the next message on the task resumes the turn, or an operator's answer in the
console does, or, with no answer in time, the deadline: those two act on the live turn itself. The first answer
wins (operator/claims.py). Every change a person would see bumps the operator feed. Shutdown aborts every live
turn.
"""

import asyncio
import functools
import logging
import time
from collections import Counter
from collections.abc import AsyncGenerator, Awaitable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from a2a.helpers import new_data_part, new_text_part
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, TaskState

from a2a_wrapper.backends.base import Backend, Prompt, Session, Turn, events_of
from a2a_wrapper.errors import BackendError, CallerLimit, SessionGone
from a2a_wrapper.events import Done, Permission, Plan, Question, StreamEvent, Text, Thought, ToolCall, ToolResult, Usage
from a2a_wrapper.frontend.operator.claims import DEADLINE, Claim, Claims
from a2a_wrapper.frontend.operator.feed import Feed
from a2a_wrapper.frontend.reporter import TaskReporter
from a2a_wrapper.permissions.approvals import Answer, NotAnAnswer, Pending, read_answer
from a2a_wrapper.permissions.gate import PermissionGate
from a2a_wrapper.sandbox.control_files import Repair
from a2a_wrapper.sandbox.control_watch import ControlWatch
from a2a_wrapper.shield.decision import Decision
from a2a_wrapper.shield.rules import Approver
from a2a_wrapper.state.sessions import ContextKey, SessionMap
from a2a_wrapper.workspaces import WorkspaceError, Workspaces

log = logging.getLogger(__name__)

SHUTTING_DOWN = "The agent shut down while this turn was running; the turn was aborted. Send the message again."
CANCELED = "The task was canceled by the caller."
UNFINISHED = "The backend ended the turn without saying it was done."


@dataclass(frozen=True, slots=True)
class TurnScope:
    context_id: str
    task_id: str
    caller: str  # the authenticated A2A caller; "" without auth

    @property
    def key(self) -> ContextKey:
        """The context's session, lock and rules are the caller's own: another caller's contextId reaches none."""
        return ContextKey(self.caller, self.context_id)


@dataclass(eq=False)
class LiveTurn:
    """A backend turn and its A2A side, alive across the requests of one task (a `GatedTurn` for the gate)."""

    turn: Turn
    events: AsyncGenerator[tuple[StreamEvent, bool]]  # each event, and whether more of its batch follow
    reporter: TaskReporter
    scope: TurnScope
    prompt: Prompt
    budget: float  # seconds of running time left (time waiting for a person does not count)
    reopened: bool = False  # the backend had lost the session once already
    canceled: bool = False  # the caller canceled the task: nothing more is reported
    stopping: bool = False  # the cancel is stopping its backend: not aborted a second time
    pending: Pending | None = None
    # waits for, then drives, the answer: the deadline's, or an operator's from the console
    deadline: asyncio.Task[None] | None = field(default=None, repr=False)
    steps: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)  # one request, or the deadline, drives it
    answered: Claim | None = None  # who answered the last request it waited on
    watched: bool = False  # its workspace's control files are still to be checked after it
    activity: str = "Starting the turn."  # what the console shows it doing; never changed per text delta
    started_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    @property
    def key(self) -> ContextKey:
        return self.scope.key

    @property
    def task_id(self) -> str:
        return self.scope.task_id

    async def reply(self, request: Permission, decision: Decision) -> None:
        await self.turn.reply(request.id, "allow" if decision.outcome == "allow" else "deny", decision.reason)
        await self.reporter.permission(request, decision)

    async def answer(self, question: Question, text: str) -> None:
        await self.turn.answer(question.id, text)


class ContextLocks:
    """Serialises turns of one context: a second message waits until the running turn calls `release`
    (which may be in a later request, when the turn paused for a person)."""

    def __init__(self) -> None:
        self._locks: dict[ContextKey, asyncio.Lock] = {}
        self._waiters: dict[ContextKey, int] = {}

    async def acquire(self, key: ContextKey) -> None:
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._waiters[key] = self._waiters.get(key, 0) + 1
        try:
            await lock.acquire()
        except BaseException:
            self._leave(key)
            raise

    def release(self, key: ContextKey) -> None:
        self._locks[key].release()
        self._leave(key)

    def _leave(self, key: ContextKey) -> None:
        self._waiters[key] -= 1
        if not self._waiters[key]:
            del self._waiters[key], self._locks[key]

    def busy(self, key: ContextKey) -> bool:
        return key in self._locks

    def callers(self) -> set[str]:
        """Callers with a turn running or paused, or a message waiting behind one."""
        return {key.caller for key in self._locks}


class Tenancy(Protocol):
    """One backend per caller (backends/tenants/): started before the caller's turn opens its session."""

    def running(self, caller: str) -> bool: ...

    async def admit(self, caller: str) -> None:
        """The caller's backend started if need be; raises `CallerLimit` when the agent may start no other."""


class Turns:
    """The agent's live turns, by task id: started, driven, paused, resumed, canceled and shut down."""

    def __init__(
        self,
        backend: Backend,
        sessions: SessionMap,
        gate: PermissionGate,
        locks: ContextLocks,
        turn_timeout: float,
        approvers: tuple[Approver, ...] = ("caller",),
        watch: ControlWatch | None = None,
        tenants: Tenancy | None = None,
        workspaces: Workspaces | None = None,
    ) -> None:
        self._backend = backend
        self._watch = watch  # the workspace's control files, checked after each turn (in place)
        self._tenants = tenants
        self._workspaces = workspaces  # per-task workspaces: each turn's end reports its context's change
        self._sessions = sessions
        self._gate = gate
        self._locks = locks
        self._turn_timeout = turn_timeout
        self._live: dict[str, LiveTurn] = {}
        self._drained = asyncio.Event()
        self._drained.set()
        self._closing = False
        self.approvers = approvers  # who may answer an approval (a question: anyone)
        self.feed = Feed()
        self._claims = Claims()
        self._checks: set[asyncio.Task[Repair]] = set()  # workspace checks after turns, running

    def live(self, task_id: str) -> LiveTurn | None:
        return self._live.get(task_id)

    def every(self) -> list[LiveTurn]:
        return list(self._live.values())

    def waiting_on(self, approval_id: str) -> LiveTurn | None:
        """The turn paused on this approval (or question), if any."""
        return next((live for live in self._live.values() if live.pending and live.pending.id == approval_id), None)

    def claim_of(self, approval_id: str) -> Claim | None:
        """Who answered this approval, while it is remembered."""
        return self._claims.get(approval_id)

    def waiting(self) -> dict[str, int]:
        """Turns paused for a person, by what they wait for: an approval or an answer to a question."""
        paused = [live.pending.request for live in self._live.values() if live.pending is not None]
        return dict(Counter("question" if isinstance(r, Question) else "approval" for r in paused))

    async def run(self, scope: TurnScope, prompt: Prompt, reporter: TaskReporter) -> None:
        """A new turn, once the context's running one has ended: driven until it ends or pauses for a person. A turn
        that must wait first (for that turn, or for the backend to open the context's session) shows its caller the
        task at once, `submitted`."""
        starting = self._tenants is not None and not self._tenants.running(scope.caller)
        if starting or self._locks.busy(scope.key) or not self._sessions.ready(scope.key):
            await reporter.accept()
        await self._locks.acquire(scope.key)
        try:
            live = await self._open(scope, prompt, reporter)
        except BaseException:
            self._locks.release(scope.key)
            raise
        if live is None:
            self._locks.release(scope.key)
            return
        try:
            begun = await self._begin(live)
        except BaseException:  # a2a-sdk cancels this request after a cancel of the task: its turn is over
            self._end(live)
            await self._checked(live)
            raise
        if begun:
            async with live.steps:
                await self._advance(live)

    async def resume(self, live: LiveTurn, message: Message, updater: TaskUpdater) -> None:
        """The next message on a paused turn's task: an answer resumes the turn; anything else asks again. After
        another's answer (the console's, the deadline's) it is refused, and the request follows the turn."""
        first = self._first_answer(live)
        if first is not None:
            await _too_late(updater, first)
            async with live.steps:  # this request shows the turn until it ends or pauses again
                return
        async with live.steps:
            pending = live.pending
            if pending is None:
                return  # the deadline answered, and the turn has ended since
            live.reporter.rebind(updater)
            if not self._caller_answers(pending):
                await live.reporter.ask(pending, caller_answers=False)
                return
            answer = read_answer(message, pending)
            if isinstance(answer, NotAnAnswer):
                await live.reporter.ask(pending, note=answer.sentence)
                return
            earlier = self._claim(live, pending, f"caller:{live.key.caller}" if live.key.caller else "caller", answer)
            if earlier is not None:  # the console's answer came while this request waited its turn
                await _too_late(updater, earlier)
                return
            await self._resolve(live, pending, answer)

    def answer_for(self, live: LiveTurn, pending: Pending, answer: Answer, person: str) -> Claim | None:
        """An answer from outside an A2A request (an operator's, "console:NAME"): claimed now, then applied by a task
        of the turn's, as the deadline's would be. Returns the earlier answer instead when there was one."""
        earlier = self._claim(live, pending, person, answer)
        if earlier is None:
            _stop_deadline(live)
            live.deadline = asyncio.create_task(self._drive(live, pending, answer, person), name=f"answer-{pending.id}")
        return earlier

    def _caller_answers(self, pending: Pending) -> bool:
        """Whether the caller may answer: a question, always; an approval, when the approvers include the caller."""
        return isinstance(pending.request, Question) or "caller" in self.approvers

    def _first_answer(self, live: LiveTurn) -> Claim | None:
        """The answer another gave to what the turn waits on (or, once it goes on, to what it waited on)."""
        return self._claims.get(live.pending.id) if live.pending is not None else live.answered

    def _claim(self, live: LiveTurn, pending: Pending, who: str, answer: Answer | None) -> Claim | None:
        """Claims `pending` for this answer (None: the deadline's); the earlier claim when someone answered first."""
        if answer is None:
            option = "answer" if isinstance(pending.request, Question) else "deny"
        else:
            option = answer.option or "answer"
        claim = Claim(pending.id, who, option)
        earlier = self._claims.claim(claim)
        if earlier is None:
            live.answered = claim
        return earlier

    async def cancel(self, task_id: str, updater: TaskUpdater | None = None) -> None:
        """A paused turn is rejected and aborted; a running one is marked, and aborted by `stop` once its canceled
        status is queued (or when a2a-sdk cancels its request first). Nothing more of it is reported but its
        workspace's change, on the cancel's `updater`."""
        live = self._live.get(task_id)
        if live is None:
            return
        await live.reporter.workspace(updater)
        if live.pending is not None:
            self._end(live)
            await _reject(live, CANCELED)
            await _abort(live.turn)
            await _closed(live)
            await self._checked(live)
        else:
            live.canceled = True
            if live.deadline is not None:
                live.deadline.cancel()
        live.reporter.clock.end("canceled")

    async def stop(self, task_id: str) -> None:
        """A canceled running turn's backend is stopped (bounded: kit/abort.py), so that the cancel is answered once
        nothing of the turn runs on. Called after the task's canceled status is queued: the turn's end must not
        reach a caller's stream before it."""
        live = self._live.get(task_id)
        if live is None or not live.canceled or live.stopping:
            return
        live.stopping = True
        await asyncio.shield(_abort(live.turn))  # runs on if this request is cancelled: no other abort follows
        await self._checked(live)

    async def shutdown(self, grace: float = 10.0) -> None:
        """Abort live turns; running ones end `failed` with a sentence. Waits for them at most `grace` s."""
        self._closing = True
        waiting = [live for live in self._live.values() if live.pending is not None]
        for live in waiting:  # no request attached: the next start marks the task failed
            self._end(live)
            await _reject(live, SHUTTING_DOWN)
        await asyncio.gather(*(_abort(live.turn) for live in [*self._live.values(), *waiting]))
        for live in waiting:
            await _closed(live)
            await self._checked(live)
        try:
            async with asyncio.timeout(grace):
                await self._drained.wait()
        except TimeoutError:
            log.warning("%d turn(s) still running after %.0f s of shutdown", len(self._live), grace)
        if self._checks:
            await asyncio.wait(self._checks, timeout=grace)
        self.feed.close()  # the console's streams end: they must not hold up the server's shutdown

    async def _open(self, scope: TurnScope, prompt: Prompt, reporter: TaskReporter) -> LiveTurn | None:
        """Opens the context's session and prepares the turn (the prompt goes out on its first step), known to
        `cancel` from here on, before its task shows `working`. Past the agent's caller limit the task is
        rejected: A2A's state for a task the agent will not run, with the reason; the request itself was sound,
        and the agent goes on serving its other callers."""
        try:
            if self._tenants is not None:
                await self._tenants.admit(scope.caller)
            opened = await self._sessions.session_for(scope.key)
        except CallerLimit as exc:
            await reporter.reject(str(exc))
            reporter.clock.end("rejected")
            return None
        except (BackendError, WorkspaceError) as exc:
            await reporter.finish(Done(outcome="failed", sentence=f"The backend could not run the turn: {exc}"))
            return None
        reporter.metadata.update({"session": opened.id, "sessionRecreated": opened.recreated})
        if self._workspaces is not None and opened.directory is not None:
            reporter.workspace_change = partial(self._workspaces.change, scope.key)
            reporter.workspace_folder = opened.directory
        turn = self._backend.turn(Session(opened.id, opened.created, opened.directory), prompt)
        live = LiveTurn(turn, events_of(turn), reporter, scope, prompt, self._turn_timeout)
        reporter.after_turn = functools.partial(self._checked, live)
        self._live[scope.task_id] = live
        self._drained.clear()
        self.feed.bump()
        return live

    async def _begin(self, live: LiveTurn) -> bool:
        """The task shows `working`, and the workspace's control files are noted; False when they cannot be read
        (fail closed: a turn whose workspace cannot be checked after it does not run) or the turn was canceled."""
        await live.reporter.working()
        if self._watch is not None:
            try:
                await self._watch.begin()
            except OSError as exc:
                self._end(live)
                await live.reporter.finish(Done(outcome="failed", sentence=f"The workspace could not be read: {exc}"))
                return False
            live.watched = True
        return True

    async def _advance(self, live: LiveTurn) -> None:
        """Drives the turn until it ends or pauses for a person; an ended turn lets its context go."""
        try:
            try:
                ended = await self._follow(live)
            except SessionGone:  # raised before anything was sent: a new session, once
                if live.reopened:
                    raise
                await self._reopen(live)
                ended = await self._follow(live)
        except BackendError as exc:
            self._end(live)
            await live.reporter.finish(Done(outcome="failed", sentence=f"The backend could not run the turn: {exc}"))
            return
        except BaseException:
            self._end(live)
            raise
        if ended:
            self._end(live)

    async def _reopen(self, live: LiveTurn) -> None:
        log.info("the session of context %s is gone from the backend; opening another", live.scope.context_id)
        self._sessions.forget(live.key)
        opened = await self._sessions.session_for(live.key)
        live.reporter.metadata.update({"session": opened.id, "sessionRecreated": opened.recreated})
        live.turn = self._backend.turn(Session(opened.id, opened.created, opened.directory), live.prompt)
        live.events = events_of(live.turn)
        live.reopened = True

    async def _follow(self, live: LiveTurn) -> bool:
        """True when the turn ended, False when it paused for a person."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(live.budget):
                async for event, more_ready in live.events:
                    if live.reporter.unheard:
                        await self._stop_unheard(live)
                        return True
                    if isinstance(event, Done):
                        if not live.canceled:
                            await live.reporter.finish(self._ending(event))
                        await self._checked(live)  # a canceled turn's, for the audit
                        await _closed(live)
                        return True
                    if await self._handle(event, live, more_ready):
                        return False
            await live.reporter.finish(Done(outcome="failed", sentence=UNFINISHED))
        except TimeoutError:
            await _abort(live.turn)
            limit = f"The turn ran past its {self._turn_timeout:g} s limit and was aborted."
            await live.reporter.finish(Done(outcome="failed", sentence=limit))
        except asyncio.CancelledError:
            if not live.stopping:
                await asyncio.shield(_abort(live.turn))
                await self._checked(live)
            raise
        finally:
            live.budget -= loop.time() - started
        return True

    async def _stop_unheard(self, live: LiveTurn) -> None:
        """a2a-sdk takes no more events of the task: it failed outside the turn (its state could not be saved, see
        state/outage.py), so the turn stops instead of running on unheard."""
        log.warning(
            "task %s failed outside its turn (its state could not be saved); its turn was aborted", live.task_id
        )
        await _abort(live.turn)
        await self._checked(live)
        await _closed(live)

    def _ending(self, done: Done) -> Done:
        """A turn that ends while the agent shuts down was aborted by it, whatever the backend says."""
        return Done(outcome="failed", sentence=SHUTTING_DOWN) if self._closing else done

    async def _handle(self, event: StreamEvent, live: LiveTurn, more_ready: bool) -> bool:
        """Reports one event; True when the turn now waits for a person."""
        reporter = live.reporter
        match event:
            case Text():
                reporter.text(event)
            case Thought():
                reporter.thought(event)
            case Usage():
                reporter.usage(event)
            case ToolCall():
                self._note(live, f"Running {event.title or event.tool}.")
                await reporter.tool_call(event)
            case ToolResult():
                self._note(live, f"Reading what {event.tool} returned.")
                await reporter.tool_result(event)
            case Plan():
                await reporter.plan(event)
            case Permission():
                pending = await self._gate.decide(live, event)
                if pending is not None:
                    await self._pause(live, pending)
                    return True
            case Question():
                await self._pause(live, self._gate.question(event))
                return True
        if not more_ready:
            await reporter.batch_end()
        return False

    async def _checked(self, live: LiveTurn) -> Repair | None:
        """The workspace's control files put back after the turn (once, whichever way it ended): for its final
        status, through the reporter, or for the audit alone when the turn ends with no status of its own."""
        if self._watch is None or not live.watched:
            return None
        live.watched = False
        scope = live.scope
        check = asyncio.create_task(self._watch.end(scope.context_id, scope.task_id, scope.caller))
        self._checks.add(check)  # shutdown waits for it
        check.add_done_callback(self._checks.discard)
        return await asyncio.shield(check)  # runs to its end when the request ending the turn is cancelled

    def _note(self, live: LiveTurn, activity: str) -> None:
        """What the turn is doing now, for the console."""
        if activity != live.activity:
            live.activity, live.updated_at = activity, time.time()
            self.feed.bump()

    async def _pause(self, live: LiveTurn, pending: Pending) -> None:
        live.pending = pending
        asked = pending.request
        waits_for = "an answer" if isinstance(asked, Question) else f"approval of {asked.tool}"
        self._note(live, f"Waiting for {waits_for}.")
        await live.reporter.ask(pending, caller_answers=self._caller_answers(pending))
        live.deadline = asyncio.create_task(self._expire(live, pending), name=f"deadline-{pending.id}")

    async def _expire(self, live: LiveTurn, pending: Pending) -> None:
        """No answer by the deadline: the gate resolves the request on the live turn, which goes on."""
        await asyncio.sleep(max(0.0, pending.left()))
        if self._claim(live, pending, DEADLINE, None) is None:
            await self._drive(live, pending, None)

    async def _drive(self, live: LiveTurn, pending: Pending, answer: Answer | None, person: str | None = None) -> None:
        """An answer from outside a request (None: the deadline's) resolves the request on the live turn."""
        async with live.steps:
            if live.pending is not pending:
                return  # answered meanwhile
            live.reporter.clock.resume()
            try:
                await self._resolve(live, pending, answer, person)
            except Exception:  # a boundary: the turn must not be left waiting because this failed
                who = person or DEADLINE
                log.exception("the answer of %s for task %s failed; aborting the turn", who, live.task_id)
                self._end(live)
                await _abort(live.turn)
                await _closed(live)

    async def _resolve(
        self, live: LiveTurn, pending: Pending, answer: Answer | None, person: str | None = None
    ) -> None:
        """The person's answer (None: the deadline's) goes to the turn through the gate, and the turn goes on."""
        live.pending = None
        _stop_deadline(live)
        self._note(live, f"Going on after the answer of {live.answered.who if live.answered else 'a person'}.")
        await live.reporter.working()
        try:
            if answer is None:
                await self._gate.expire(live, pending)
            else:
                await self._gate.answer(live, pending, answer, person)
        except BaseException:
            self._end(live)
            raise
        await self._advance(live)

    def _end(self, live: LiveTurn) -> None:
        """The turn is over for this task (ended, canceled, or abandoned): its context is free again."""
        if self._live.get(live.task_id) is not live:
            return
        del self._live[live.task_id]
        _stop_deadline(live)
        self._locks.release(live.key)
        self.feed.bump()
        if not self._live:
            self._drained.set()


def _stop_deadline(live: LiveTurn) -> None:
    """Cancels the turn's deadline, unless it is the deadline that now drives the turn."""
    deadline = live.deadline
    if deadline is not None and deadline is not asyncio.current_task():
        deadline.cancel()
        live.deadline = None


async def _too_late(updater: TaskUpdater, first: Claim) -> None:
    """A caller's answer after another's: refused with a sentence naming the first, while the turn goes on."""
    data = {"type": "approval_answered", "approval": first.approval, "decidedBy": first.who, "option": first.option}
    message = updater.new_agent_message([new_text_part(first.refusal()), new_data_part(data)])
    await updater.update_status(TaskState.TASK_STATE_WORKING, message=message)


async def _reject(live: LiveTurn, sentence: str) -> None:
    """The backend request a paused turn waits on gets a no (fail closed); no answer reaches the turn after it."""
    pending, live.pending = live.pending, None
    if pending is not None and isinstance(pending.request, Permission):
        await _quietly(live.turn.reply(pending.request.id, "deny", sentence))


async def _closed(live: LiveTurn) -> None:
    """An ended turn's events closed: the backend's turn cleans up now (its subscription, its hooks), not when the
    collector finds it. Its status is final already: a failure here is logged, never a second ending. Called by
    whoever ends the turn (its `Done`, a cancel or shutdown of a paused turn), never while another iterates it."""
    try:
        await live.events.aclose()
    except Exception:
        log.exception("the backend's clean-up after the turn of task %s failed", live.task_id)


async def _abort(turn: Turn) -> None:
    await _quietly(turn.abort())


async def _quietly(action: Awaitable[None]) -> None:
    try:
        await action
    except BackendError as exc:
        log.warning("backend call failed: %s", exc)
