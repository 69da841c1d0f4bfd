"""/health/live, /health/ready and /health: what a supervisor asks of an agent; none of them waits on the backend.

Liveness (/health/live) is this process answering: nothing else is asked, so a slow database or a busy backend
never gets the agent restarted. Readiness (/health/ready) is whether a message sent now can run: the state
database answers (state/readiness.py: a bounded check whose answer is reused for a second) and the backend's
process runs (what the wrapper knows of it at once: a busy backend answers late and is not down). A 503 names
what is not ready in `not_ready`. /health, which the fleet, compose and people have always asked, is readiness
with its detail (the backend, where it runs): it has always answered 503 while the backend was down.
"""

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from a2a_wrapper.backends.base import Backend
from a2a_wrapper.state.readiness import StateCheck

LIVE_PATH = "/health/live"
READY_PATH = "/health/ready"


def health_routes(backend: Backend, state: StateCheck | None, runtime: dict[str, Any] | None) -> list[Route]:
    async def live(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def ready(request: Request) -> JSONResponse:
        backend_status = await backend.health()
        body: dict[str, Any] = {"frontend": "ok", "backend": backend_status}
        not_ready = [] if backend_status.get("healthy") else [f"backend: {backend_status.get('error')}"]
        if state is not None:
            problem = await state.problem()
            body["state"] = {"database": state.database.described(), "ok": problem is None}
            if problem is not None:
                body["state"]["error"] = problem
                not_ready.append(f"state: {problem}")
        if runtime is not None:
            body["runtime"] = runtime
        body["status"] = "degraded" if not_ready else "ok"
        if not_ready:
            body["not_ready"] = not_ready
        return JSONResponse(body, status_code=503 if not_ready else 200)

    return [
        Route(LIVE_PATH, live, methods=["GET"]),
        Route(READY_PATH, ready, methods=["GET"]),
        Route("/health", ready, methods=["GET"]),
    ]
