"""``ClusterLimit``'s lease book on its own (no cluster: the class is what the named detached
actor runs): leases expire a TTL after their holder's last renewal, a live holder's renewals
keep them, a waiter gets an expired lease, and nobody returns another holder's lease."""

from __future__ import annotations

import asyncio
import time

from verifiers.ray import ClusterLimit


def test_leases_expire_unless_renewed_and_waiters_get_them() -> None:
    async def main() -> None:
        limit = ClusterLimit(1, ttl_s=0.3)
        first = await limit.acquire("a")
        limit.release("b", first)  # not b's lease: ignored
        assert limit.state()["held"] == 1
        started = time.monotonic()
        for _ in range(4):  # a live holder: renewed every 0.1 s, kept past the TTL
            await asyncio.sleep(0.1)
            assert limit.renew("a") == 1
        waiter = asyncio.ensure_future(limit.acquire("b"))
        await asyncio.sleep(0.1)
        assert not waiter.done() and time.monotonic() - started > 0.3
        # "a" dies without a word: its lease expires and the waiter gets the slot
        second = await asyncio.wait_for(waiter, timeout=2.0)
        state = limit.state()
        assert second != first and state["held"] == 1 and state["expired"] == 1
        assert limit.renew("a") == 0  # an expired lease is not brought back
        assert limit.release_holder("b") == 1 and limit.state()["held"] == 0
        assert limit.state()["peak"] == 1

    asyncio.run(main())
