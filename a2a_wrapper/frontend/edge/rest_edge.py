"""The 0.3 REST streams refuse a bad request with a status code, as the 1.0 ones do.

a2a-sdk's 1.0 REST routes take a stream's first event before answering, so an unknown task is a 404 and an
ended one a 400. Its 0.3 routes (`/v1/message:stream`, `/v1/tasks/{id}:subscribe`) answer 200 at once and
then raise inside the stream: the caller sees the connection drop, the log a traceback. Here the 0.3
streaming routes take the first event first too.
"""

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from a2a.utils.error_handlers import build_rest_error_payload
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

V03_STREAMS = ("/v1/message:stream", "/v1/tasks/{id}:subscribe")

Endpoint = Callable[[Request], Awaitable[Response]]


def eager_v03_streams(routes: list[BaseRoute]) -> list[BaseRoute]:
    """The SDK's REST routes, the 0.3 streaming ones answering errors before the stream starts."""
    return [
        Route(route.path, _first_event_first(route.endpoint), methods=sorted(route.methods or ()))
        if isinstance(route, Route) and route.path.endswith(V03_STREAMS)
        else route
        for route in routes
    ]


def _first_event_first(endpoint: Endpoint) -> Endpoint:
    async def eager(request: Request) -> Response:
        response = await endpoint(request)
        if not isinstance(response, EventSourceResponse):
            return response  # the SDK refused the request already
        events = response.body_iterator
        try:
            first = await anext(events)  # type: ignore[call-overload]
        except StopAsyncIteration:
            return response
        except Exception as exc:  # the SDK's stream wrapper has logged it; the caller gets the SDK's error body
            payload = build_rest_error_payload(exc)
            return JSONResponse(payload, status_code=payload["error"]["code"])
        response.body_iterator = _prepended(first, events)
        return response

    return eager


async def _prepended(first: Any, rest: Any) -> AsyncIterator[Any]:
    yield first
    async for item in rest:
        yield item
