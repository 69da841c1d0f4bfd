"""The a2a-sdk executor: the seam between A2A requests and live turns (frontend/turns.py).

A request on a task whose turn is alive (paused for a person) resumes it; any other request starts a turn,
reported through a TaskReporter of its own. Cancel hands the task's turn to `Turns.cancel`, ends the task, and
returns once the turn's backend has stopped (`Turns.stop`).
"""

from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Task, TaskState, TaskStatus

from a2a_wrapper.frontend.auth import caller_of
from a2a_wrapper.frontend.metrics import AgentMetrics
from a2a_wrapper.frontend.prompts import UnusableMessage, prompt_from_message
from a2a_wrapper.frontend.reporter import TaskReporter
from a2a_wrapper.frontend.turns import CANCELED, Turns, TurnScope
from a2a_wrapper.guard import GuardSettings
from a2a_wrapper.guard.turn import TurnGuard


class TurnExecutor(AgentExecutor):
    def __init__(self, turns: Turns, guard: GuardSettings, metrics: AgentMetrics) -> None:
        self._turns = turns
        self._guard = guard
        self._metrics = metrics

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.message is not None
        current = context.current_task
        if current is not None and current.status.state in TERMINAL_TASK_STATES:
            return  # queued behind the request that ended the task
        context_id = current.context_id if current else context.context_id
        assert context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        live = self._turns.live(context.task_id)
        if live is not None:
            await self._turns.resume(live, context.message, updater)
            return
        opening = None
        if current is None:
            opening = Task(
                id=context.task_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
        reporter = TaskReporter(updater, TurnGuard(self._guard), self._metrics.turn(), opening)
        try:
            prompt = prompt_from_message(context.message)
        except UnusableMessage as exc:
            await reporter.reject(f"Message refused: {exc}.")
            self._metrics.ended("rejected")
            return
        scope = TurnScope(context_id, context.task_id, caller_of(context.call_context))
        await self._turns.run(scope, prompt, reporter)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        task = context.current_task
        context_id = task.context_id if task else context.context_id
        assert context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        await self._turns.cancel(context.task_id, updater)
        await updater.cancel(updater.new_agent_message([new_text_part(CANCELED)]))
        await self._turns.stop(context.task_id)
