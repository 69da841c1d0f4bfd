"""The permission gate: each permission request of a turn decided, put to a person when the rules ask, resolved
by the person's answer or by the deadline, applied to the turn, audited and counted.

The rules decide with the context's own "always" rules. An allow or a deny reaches the turn at once; an ask
becomes the `Pending` the turn waits on. No answer by the deadline is an outcome of its own: a deny with the
EXPIRED sentence (a question is told to go on alone). Who decided is one word, `decided_by`: "rules",
"deadline", or the person (the caller's name, "person" without auth; "console:NAME" for an operator in the
fleet's console). The request's class is computed once.
"""

import logging
import time
from collections.abc import Callable
from typing import Protocol

from a2a_wrapper.events import Permission, Question
from a2a_wrapper.guard import redact_value
from a2a_wrapper.permissions.approvals import Answer, Pending
from a2a_wrapper.permissions.policy import Policy
from a2a_wrapper.shield import Rule, classify
from a2a_wrapper.shield.decision import Decision
from a2a_wrapper.state.audit import UNAUDITED, AuditEntry, AuditLog, AuditUnavailable
from a2a_wrapper.state.context_rules import ContextRules
from a2a_wrapper.state.sessions import ContextKey

log = logging.getLogger(__name__)

EXPIRED = "No person answered in time, so the request is denied. Do not retry it; do what you can without it."
PERSON_DENIED = "A person denied this tool call. Do not retry it; do what you can without it."
ON_YOUR_OWN = "No person answered in time; decide on your own."
ONCE = "not kept for this context: it names a credential, and a rule would keep it in clear"
Count = Callable[[str, str, str], None]  # a decision's class, outcome and decided_by, for the metrics


class GatedTurn(Protocol):
    """A turn as the gate acts on it: whose it is, and how a decision or an answer reaches it."""

    @property
    def key(self) -> ContextKey: ...

    @property
    def task_id(self) -> str: ...

    async def reply(self, request: Permission, decision: Decision) -> None:
        """The backend gets the decision and the stream shows it."""

    async def answer(self, question: Question, text: str) -> None: ...


class PermissionGate:
    def __init__(self, policy: Policy, context_rules: ContextRules, audit: AuditLog, count: Count, agent: str) -> None:
        self._policy = policy
        self._context_rules = context_rules  # a person's "always", per caller's context
        self._audit = audit
        self._count = count
        self._agent = agent

    async def decide(self, turn: GatedTurn, request: Permission) -> Pending | None:
        """Decides a request by the rules: applied at once (None), or the Pending a person is asked."""
        started = time.monotonic()
        cls = classify(request)
        decision = self._policy.for_context(await self._context_rules.of(turn.key)).decide(request)
        if decision.outcome == "ask":
            self._count(cls, "ask", "rules")
            self._journal(request, cls, decision, "rules")
            return Pending(request, decision.reason, decision.rule, self._policy.ask_timeout, cls=cls)
        await self._apply(turn, request, cls, decision, "rules", started)
        return None

    def question(self, question: Question) -> Pending:
        return Pending(question, question.text, "question", self._policy.ask_timeout)

    async def answer(self, turn: GatedTurn, pending: Pending, answer: Answer, person: str | None = None) -> None:
        """A person's answer; for a permission past its deadline it is no answer at all. `person` is who answered
        when it is not the turn's caller (an operator in the console: "console:NAME")."""
        request = pending.request
        if isinstance(request, Question):
            await turn.answer(request, answer.text or "")
        elif pending.left() <= 0:
            await self.expire(turn, pending)
        else:
            person = person or turn.key.caller or "person"
            decision = await self._decision_of(turn.key, request, answer, person)
            await self._apply(turn, request, pending.cls, decision, person, pending.asked_clock)

    async def expire(self, turn: GatedTurn, pending: Pending) -> None:
        """No answer by the deadline: the request is denied; a question is told to go on alone."""
        request = pending.request
        if isinstance(request, Question):
            await turn.answer(request, ON_YOUR_OWN)
            return
        decision = Decision("deny", EXPIRED, "person:deadline")
        await self._apply(turn, request, pending.cls, decision, "deadline", pending.asked_clock)

    async def _decision_of(self, key: ContextKey, request: Permission, answer: Answer, person: str) -> Decision:
        """A person's option as a decision; "always" also adds the narrowest rule to the context."""
        if answer.option == "deny":
            return Decision("deny", PERSON_DENIED, f"person:{person}")
        decision = Decision("allow", f"{request.tool} allowed by {person}", f"person:{person}")
        if answer.option != "allow_context":
            return decision
        rules = await self._context_rules.of(key)
        rule = self._policy.always_rule(request, f"always-{len(rules) + 1}")
        if holds_credential(rule):  # a rule is kept in clear to match: this one is allowed once only
            return Decision("allow", f"{request.tool} allowed once by {person}: {ONCE}", decision.rule)
        await self._context_rules.add(key, rule)
        return decision

    async def _apply(
        self, turn: GatedTurn, request: Permission, cls: str, decision: Decision, decided_by: str, started: float
    ) -> None:
        """The audit log keeps the decision, the turn gets it, the metrics count it. An allow whose entry cannot be
        written is a deny (fail closed: a tool call runs only as the audit shows it), with the audit's sentence."""
        entry = AuditEntry(
            time=time.time(),
            agent=self._agent,
            context_id=turn.key.context_id,
            task_id=turn.task_id,
            caller=turn.key.caller,
            tool=request.tool,
            cls=cls,
            target=target_of(request),
            decision=decision.outcome,
            rule=decision.rule,
            decided_by=decided_by,
            wait_ms=(time.monotonic() - started) * 1000,
        )
        try:
            await self._audit.record(entry)
        except AuditUnavailable as exc:
            if decision.outcome == "allow":
                decision = Decision("deny", f"{exc}; a tool call is not allowed until it can be", UNAUDITED)
        await turn.reply(request, decision)
        self._count(cls, decision.outcome, decided_by)
        self._journal(request, cls, decision, decided_by)

    def _journal(self, request: Permission, cls: str, decision: Decision, decided_by: str) -> None:
        """One INFO line per decision, as the audit has it: tool, class, target (redacted), outcome, rule, who."""
        target = redact_value(target_of(request))
        shown = target if len(target) <= 120 else target[:117] + "..."
        log.info(
            "[%s] %s %s (%s) %s: rule %s, decided by %s",
            self._agent,
            decision.outcome,
            request.tool,
            cls,
            shown or "-",
            decision.rule,
            decided_by,
        )


def target_of(request: Permission) -> str:
    """What a decision is about: the command, the URL, or the paths."""
    return request.command or request.url or ", ".join(request.paths)


def holds_credential(rule: Rule) -> bool:
    """Whether a rule's patterns carry text the guard would redact (rules are stored as written, to match)."""
    patterns = [*(rule.commands or ()), *(rule.paths or ()), *(rule.hosts or ())]
    return redact_value(patterns) != patterns
