"""The operator endpoint's pure parts: first answer wins (claims.py), and the feed the console watches (feed.py)."""

import asyncio

from a2a_wrapper.frontend.operator.claims import DEADLINE, Claim, Claims
from a2a_wrapper.frontend.operator.feed import Feed


def test_the_first_answer_wins_and_later_ones_are_told_who_answered() -> None:
    claims = Claims()
    assert claims.claim(Claim("apr_1", "console:alice", "allow_once")) is None
    earlier = claims.claim(Claim("apr_1", "caller:bob", "deny"))
    assert earlier is not None
    assert earlier.refusal() == "Approval apr_1 was already answered by console:alice (allow_once)."
    assert Claim("apr_2", DEADLINE, "deny").refusal() == "Approval apr_2 expired unanswered (deny)."


def test_claims_remember_only_the_most_recent_answers() -> None:
    claims = Claims(keep=2)
    for number in range(3):
        claims.claim(Claim(f"apr_{number}", "caller", "deny"))
    assert claims.get("apr_0") is None
    assert claims.get("apr_2") is not None


async def test_a_watcher_wakes_at_a_change_and_for_good_when_the_feed_closes() -> None:
    feed = Feed()
    async with asyncio.timeout(5):
        waiting = asyncio.create_task(feed.moved_past(feed.version))
        await asyncio.sleep(0)
        assert not waiting.done()
        feed.bump()
        assert await waiting is True
        seen = feed.version
        waiting = asyncio.create_task(feed.moved_past(seen))
        await asyncio.sleep(0)
        feed.close()
        assert await waiting is False
        assert await feed.moved_past(seen) is False
