"""The concurrency limit's order (`_Slots`: the earliest stage's waiting request first) and the adaptive back-off's samples
(`_Adapt`: taken in send order, so a heavy-tailed latency at a change of load is not read as a queue)."""

import asyncio, heapq, random
from types import SimpleNamespace

from scibench.llm import ModelSpec, _Adapt, _Slots, _STAGE, backoff_limit, run_sync


async def _order(sends, order=(), n=1, cancel=()):
    """Take all `n` slots of a limit with stage `order`, queue `sends` ([(stage, name)]), cancel the waiters named in
    `cancel`, then free the slots."""
    sem, got = _Slots(n), []
    sem.order = {k: i for i, k in enumerate(order)}
    for _ in range(n):
        await sem.acquire()

    async def one(stage, name):
        _STAGE.set(stage)
        async with sem:
            got.append(name)
            await asyncio.sleep(0)

    tasks = {name: asyncio.ensure_future(one(stage, name)) for stage, name in sends}
    await asyncio.sleep(0)
    for name in cancel:
        tasks[name].cancel()
    for _ in range(n):
        sem.release()
    await asyncio.gather(*tasks.values(), return_exceptions=True)
    return got, sem


def test_an_earlier_stage_goes_before_a_later_stage_backlog():
    sends = [("grade", f"g{i}") for i in range(3)] + [("agent", "a1"), ("other", "o1"), ("agent", "a2")]
    got, sem = run_sync(_order(sends, ["distill", "agent", "grade"]))
    assert got == ["a1", "a2", "g0", "g1", "g2", "o1"]  # the agent's calls first, a stage not in the order last
    assert not sem.locked() and sem._free == 1


def test_without_an_order_first_come_first_served_and_a_cancelled_waiter_is_skipped():
    sends = [("a", "a0"), ("b", "b0"), ("a", "a1"), ("b", "b1")]
    got, sem = run_sync(_order(sends, cancel=["a0"]))
    assert got == ["b0", "a1", "b1"]
    assert sem._free == 1


def test_a_hold_goes_before_every_waiter():
    async def go():
        sem = _Slots(1)
        await sem.acquire()
        _STAGE.set("x")
        w = asyncio.ensure_future(sem.acquire())
        await asyncio.sleep(0)
        h = asyncio.ensure_future(sem.acquire(first=True))
        await asyncio.sleep(0)
        sem.release()
        await asyncio.sleep(0)
        return h.done(), w.done()

    assert run_sync(go()) == (True, False)


def _timeline(n: int, seed: int = 3):
    """A client with `n` slots and a server that never queues (lognormal latency, median 0.2 s, sigma 1): a saturated
    phase, a dip to a few requests in flight, a burst back to `n` → [(answered at, send number, in flight when sent,
    seconds)]."""
    rng, t, flying, out, seq = random.Random(seed), 0.0, [], [], 0

    def send(now):
        nonlocal seq
        lat = 0.2 * pow(2.718281828, rng.gauss(0, 1))
        heapq.heappush(flying, (now + lat, seq, len(flying), lat))
        seq += 1

    for _ in range(n):
        send(0.0)
    for _ in range(3 * n):  # saturated: each answer's slot sent again at once
        t, s, k, lat = heapq.heappop(flying)
        out.append((t, s, k, lat))
        send(t)
    while len(flying) > 4:  # the dip: answers not replaced
        t, s, k, lat = heapq.heappop(flying)
        out.append((t, s, k, lat))
    for _ in range(n - len(flying)):  # the burst
        send(t)
    while flying:
        out.append(heapq.heappop(flying))
    return out


def test_backoff_samples_in_send_order_see_no_queue_where_completion_order_would():
    n = 128
    events = _timeline(n)
    # taken as they come back, some window of n samples reads as a queue (the test's premise)
    done = [(k, lat) for _, _, k, lat in events]
    assert min(backoff_limit(done[i : i + n], n) for i in range(0, len(done) - n + 1, n // 4)) < n
    spec = ModelSpec("w", "http://127.0.0.1:9/v1", "w")
    ad = _Adapt(SimpleNamespace(spec=spec, progress=False), SimpleNamespace(start=lambda c: c.close()), None, n)
    ad.inflight = ad.sends = len(events)  # every request sent; they come back in the timeline's order
    for _, s, k, lat in events:
        ad.back((s, k), lat)
    assert ad.n == n and not ad.back_, "backed off from a server that never queues"
