"""ListTasks pages bounded in bytes as well as in tasks.

a2a-sdk pages by count (50 by default, at most 100; past it invalid-params "maximum page size is 100") and loads
each task whole. With their answers (includeArtifacts) a hundred tasks of a megabyte are a 10 MB page, which the
route serialises on the event loop (370 ms without /health, measured). A page here ends early instead once its tasks
pass PAGE_BYTES encoded, and its nextPageToken, the SDK's own, continues after the last task it holds; a single
task past the bound is still a page of one.
"""

from collections.abc import Sequence

from a2a.server.context import ServerCallContext
from a2a.types import ListTasksRequest, ListTasksResponse, Task

from a2a_wrapper.frontend.handler.delegating_handler import DelegatingHandler

PAGE_BYTES = 4 * 1024 * 1024


class BoundedPages(DelegatingHandler):
    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        page = await self._inner.on_list_tasks(params, context)
        fitting = tasks_within(page.tasks, PAGE_BYTES)
        if fitting == len(page.tasks):
            return page
        shorter = ListTasksRequest()
        shorter.CopyFrom(params)
        shorter.page_size = fitting  # asked again, so that the SDK writes the token after the last task kept
        return await self._inner.on_list_tasks(shorter, context)


def tasks_within(tasks: Sequence[Task], budget: int) -> int:
    """How many of the first tasks fit in `budget` bytes encoded; at least one."""
    total = 0
    for count, task in enumerate(tasks):
        total += task.ByteSize()
        if total > budget:
            return max(count, 1)
    return len(tasks)
