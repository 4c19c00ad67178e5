"""Shard leases on a real PostgreSQL: shares, failover, fencing, a hung holder."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest

from courtier.pipeline.cluster.lease_tables import LOCK_SPACE as _LOCK_SPACE
from courtier.pipeline.cluster.shards import ShardKeeper, shard_of
from courtier.politeness.gcra import KeyParams, Limit, Slot
from courtier.politeness.limiter.base import BookingRequest, Fence, LeaseLost
from courtier.politeness.limiter.postgres import LEASES, PostgresLimiter

SHARDS = 8


@pytest.fixture
def dsn(postgres_dsn: str) -> Iterator[str]:
    """A database of its own for each test (leases and limiter rows are global there)."""
    name = f"shards_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres_dsn.replace("dbname=postgres", f"dbname={name}")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


class Recorder:
    def __init__(self) -> None:
        self.taken: dict[int, int] = {}
        self.lost: list[tuple[int, bool]] = []

    async def acquired(self, shard: int, token: int) -> None:
        self.taken[shard] = token

    async def lost_shard(self, shard: int, graceful: bool) -> None:
        self.taken.pop(shard, None)
        self.lost.append((shard, graceful))


def keeper(dsn: str, name: str, recorder: Recorder, ttl: float = 30.0) -> ShardKeeper:
    return ShardKeeper(
        dsn,
        name,
        shards=SHARDS,
        ttl=ttl,
        on_acquired=recorder.acquired,
        on_lost=recorder.lost_shard,
    )


async def _until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` (a keeper's callbacks change it from its own task)."""
    async with asyncio.timeout(20):
        while not condition():  # noqa: ASYNC110 - the recorder has no event to wait on
            await asyncio.sleep(0.02)


def _expire(dsn: str, shard: int) -> None:
    """The shard's lease has expired: its holder stopped renewing (or renewed too late)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"UPDATE {LEASES} SET expires_at = 0 WHERE shard = %s", (shard,))


def test_a_site_always_falls_into_the_same_shard() -> None:
    assert shard_of("a.test", 64) == shard_of("a.test", 64)
    assert {shard_of(f"s{n}.test", 64) for n in range(1000)} == set(range(64))


async def test_two_workers_share_the_shards_without_overlap(dsn: str) -> None:
    a, b = Recorder(), Recorder()
    first, second = keeper(dsn, "w-a", a), keeper(dsn, "w-b", b)
    await first.start()
    await first.beat()
    assert len(first.held) == SHARDS  # alone: everything
    await second.start()
    for _ in range(2):
        await second.beat()
        await first.beat()  # sees two live workers: gives half back
        await second.beat()
    assert len(first.held) == len(second.held) == SHARDS // 2
    assert not set(first.held) & set(second.held)
    assert all(graceful for _shard, graceful in a.lost)
    await first.stop()
    await second.stop()


async def test_a_dead_workers_shards_are_taken_at_once_with_new_tokens(dsn: str) -> None:
    a, b = Recorder(), Recorder()
    first, second = keeper(dsn, "w-a", a), keeper(dsn, "w-b", b)
    await first.start()
    await first.beat()
    tokens = dict(first.held)
    assert first._conn is not None
    backend = (await (await first._conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
    await first._conn.close()  # the worker died: its session (and advisory locks) went too
    # The server ends the session's backend, and with it the locks, a moment after the
    # client hung up: wait for that, not for the dead worker's heartbeat to expire.
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(100):
            gone = conn.execute(
                "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = %s", (backend,)
            ).fetchone()
            if gone is not None and gone[0]:
                break
            await asyncio.sleep(0.05)
    try:
        await second.start()
        await second.beat()
        # The dead worker's heartbeat is still fresh (ttl 30 s), but its session holds no
        # lock any more: it is not counted live, and the newcomer takes every shard at once.
        assert len(second.held) == SHARDS
        assert all(second.held[s] == tokens[s] + 1 for s in second.held)
    finally:
        await second.stop()


async def test_a_booking_fenced_by_a_lost_lease_is_refused(dsn: str) -> None:
    a, b = Recorder(), Recorder()
    first, second = keeper(dsn, "w-a", a), keeper(dsn, "w-b", b)
    await first.start()
    await first.beat()
    shard = min(first.held)
    stale = first.fence(shard)
    assert stale is not None
    limiter = await PostgresLimiter.connect(dsn)
    limit = Limit("site:a.test", KeyParams(1.0))
    assert isinstance(await limiter.book([limit], 1.0, fence=stale), Slot)
    assert first._conn is not None
    await first._conn.close()
    await second.start()
    await second.beat()
    if shard not in second.held:  # the newcomer took the other half: make it take ours too
        await second._take(second._conn, SHARDS)  # type: ignore[arg-type]
    assert shard in second.held
    with pytest.raises(LeaseLost):
        await limiter.book([limit], 1.0, fence=stale)  # the old holder books nothing more
    fresh = second.fence(shard)
    assert isinstance(await limiter.book([limit], 1.0, fence=fresh), Slot)
    # In a batch, the stale fence fails its own request only, and books nothing for it.
    other = Limit("site:b.test", KeyParams(1.0))
    before = await limiter.tats(["site:a.test"])
    batch = [
        BookingRequest((other,), 1.0, fence=fresh),
        BookingRequest((limit,), 1.0, fence=stale),
        BookingRequest((other,), 1.0),
    ]
    first_slot, lost, second_slot = await limiter.book_many(batch)
    assert isinstance(lost, LeaseLost)
    assert isinstance(first_slot, Slot) and isinstance(second_slot, Slot)
    assert second_slot.start == first_slot.start + 1.0
    assert await limiter.tats(["site:a.test"]) == before
    await limiter.close()
    await second.stop()


async def test_a_booking_fenced_by_the_same_workers_older_token_is_refused(dsn: str) -> None:
    """A worker that lost a shard and took it back holds it under a new token: a booking
    still fenced by the old token (a lane that has not heard yet) is refused, though its
    owner is the very same worker. The owner alone does not fence."""
    recorder = Recorder()
    first = keeper(dsn, "w-a", recorder)
    await first.start()
    await first.beat()
    shard = min(first.held)
    stale = first.fence(shard)
    assert stale is not None
    limiter = await PostgresLimiter.connect(dsn)
    limit = Limit("site:a.test", KeyParams(1.0))
    assert isinstance(await limiter.book([limit], 1.0, fence=stale), Slot)
    _expire(dsn, shard)  # its renewals came late: the shard is dropped ...
    del first.held[shard]
    await first.beat()  # ... and taken again by the same worker
    fresh = first.fence(shard)
    assert fresh is not None
    assert (fresh.owner, fresh.token) == (stale.owner, stale.token + 1)
    with pytest.raises(LeaseLost):
        await limiter.book([limit], 1.0, fence=stale)
    assert isinstance(await limiter.book([limit], 1.0, fence=fresh), Slot)
    await limiter.close()
    await first.stop()


async def test_an_expired_lease_of_a_hung_holder_is_taken(dsn: str) -> None:
    a, b = Recorder(), Recorder()
    hung, rescuer = keeper(dsn, "w-hung", a), keeper(dsn, "w-ok", b)
    await hung.start()
    await hung.beat()
    with psycopg.connect(dsn, autocommit=True) as conn:  # it stopped renewing long ago
        conn.execute(f"UPDATE {LEASES} SET expires_at = 0")
        conn.execute("UPDATE courtier_workers SET heartbeat_at = 0 WHERE id = 'w-hung'")
    await rescuer.start()
    # One beat ends the hung session, waits for it to be gone and takes every shard (it
    # used to take them a beat later, when the session had gone by then: it had not always).
    await rescuer.beat()
    assert len(rescuer.held) == SHARDS
    assert hung._conn is not None
    with pytest.raises(psycopg.OperationalError):
        await hung._conn.execute("SELECT 1")
    await rescuer.stop()


async def test_fences_name_the_owner_and_token(dsn: str) -> None:
    recorder = Recorder()
    only = keeper(dsn, "w-only", recorder)
    await only.start()
    await only.beat()
    shard = min(only.held)
    assert only.fence(shard) == Fence(shard, "w-only", only.held[shard])
    assert recorder.taken == only.held
    await only.stop()
    assert only.fence(shard) is None


async def test_a_unix_socket_url_reaches_the_store_and_its_leases(dsn: str) -> None:
    from courtier.inputs import check_postgres_reachable, parse_store
    from pg import RUNNING

    cluster = RUNNING[0]
    database = dsn.rsplit("dbname=", 1)[1]
    spec = parse_store(
        f"postgresql:///{database}?host={cluster.socket_dir}&port={cluster.port}&user=postgres"
    )
    check_postgres_reachable(spec)  # type: ignore[arg-type]
    recorder = Recorder()
    over_socket = keeper(spec.conninfo, "w-socket", recorder)  # type: ignore[union-attr]
    await over_socket.start()
    await over_socket.beat()
    assert over_socket.held
    await over_socket.stop()


async def test_a_shard_dropped_and_taken_again_is_given_back_whole(dsn: str) -> None:
    a, b = Recorder(), Recorder()
    first, second = keeper(dsn, "w-a", a), keeper(dsn, "w-b", b)
    await first.start()
    await first.beat()
    shard = min(first.held)
    # Its renewals came late and a booking's fence failed on the expired lease: the engine
    # drops the shard (``Cluster.lease_lost``) while the session still holds its lock.
    _expire(dsn, shard)
    del first.held[shard]
    await first.beat()  # below its target: it takes the shard again
    assert shard in first.held
    await first.give_back(shard)
    assert first._conn is not None
    cursor = await first._conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s "
        "AND pid = pg_backend_pid()",
        (shard,),
    )
    assert await cursor.fetchone() == (0,)  # a lock taken twice would still be held once
    # Another worker takes it at once, without ending the first one's session.
    await second.start()
    assert second._conn is not None
    assert await second._try_take(second._conn, shard, True) is not None
    await first._conn.execute("SELECT 1")
    await second.stop()
    await first.stop()


async def _locked_by(keeper_: ShardKeeper) -> set[int]:
    assert keeper_._conn is not None
    cursor = await keeper_._conn.execute(
        "SELECT objid::integer FROM pg_locks WHERE locktype = 'advisory' AND classid = %s "
        "AND pid = pg_backend_pid()",
        (_LOCK_SPACE,),
    )
    return {int(row[0]) for row in await cursor.fetchall()}


async def test_a_lock_kept_for_a_dropped_shard_is_let_go_at_the_next_beat(dsn: str) -> None:
    a, b = Recorder(), Recorder()
    first, second = keeper(dsn, "w-a", a), keeper(dsn, "w-b", b)
    await first.start()
    await first.beat()
    await second.start()
    await second.beat()
    await first.beat()  # two live workers: it gives half back
    assert await _locked_by(first) == set(first.held)
    shard = min(first.held)
    del first.held[shard]  # dropped after a fence failed; the lock is still the session's
    _expire(dsn, shard)
    await first.beat()
    # The session locks exactly the shards it holds: none that another worker could only
    # take by ending this session as a hung holder's.
    assert await _locked_by(first) == set(first.held)
    if shard not in first.held:  # it took another shard to make up its share
        assert second._conn is not None
        assert await second._try_take(second._conn, shard, False) is not None
        assert first._conn is not None
        await first._conn.execute("SELECT 1")  # its session lives on
    await second.stop()
    await first.stop()


class SlowGiver(Recorder):
    """Giving a shard back waits for its fetches in flight: here ``delay`` s a shard."""

    def __init__(self, delay: float = 0.25) -> None:
        super().__init__()
        self.delay = delay

    async def lost_shard(self, shard: int, graceful: bool) -> None:
        if graceful:
            await asyncio.sleep(self.delay)
        await super().lost_shard(shard, graceful)


async def _unexpired(dsn: str, owner: str) -> int:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cursor = await conn.execute(
            f"SELECT count(*) FROM {LEASES} WHERE owner = %s "
            "AND expires_at > extract(epoch FROM clock_timestamp())",
            (owner,),
        )
        row = await cursor.fetchone()
    return int(row[0]) if row else -1


async def test_the_shards_kept_are_renewed_while_others_are_given_back(dsn: str) -> None:
    # Four give-backs of 0.25 s outlast the 0.9 s ttl: the four shards kept must not expire
    # meanwhile (another worker would end this one's session as a hung holder's).
    a, b = SlowGiver(), Recorder()
    first, second = keeper(dsn, "w-a", a, ttl=0.9), keeper(dsn, "w-b", b, ttl=30.0)
    await first.start()
    await first.beat()
    assert len(first.held) == SHARDS
    await second.start()
    await first.beat()  # two live workers: it gives four back, one by one
    assert len(first.held) == SHARDS // 2
    assert await _unexpired(dsn, "w-a") == SHARDS // 2
    a.delay = 0.0  # giving the rest back at the stop is not what is tested here
    await first.stop()
    await second.stop()


async def test_the_shards_kept_never_expire_while_one_give_back_outlasts_the_ttl(
    dsn: str,
) -> None:
    # One shard's fetches in flight may take up to the fetch timeout (60 s) against a 15 s
    # ttl: renewals go on during a give-back, not only between two.
    a, b = SlowGiver(delay=1.2), Recorder()
    first, second = keeper(dsn, "w-a", a, ttl=0.9), keeper(dsn, "w-b", b, ttl=30.0)
    await first.start()
    await first.beat()
    await second.start()
    lowest = SHARDS
    rebalance = asyncio.ensure_future(first.beat())  # gives four back, 1.2 s each
    while not rebalance.done():
        lowest = min(lowest, await _unexpired(dsn, "w-a"))
        await asyncio.sleep(0.1)
    await rebalance
    assert len(first.held) == SHARDS // 2
    assert lowest >= SHARDS // 2
    a.delay = 0.0  # giving the rest back at the stop is not what is tested here (4.8 s)
    await first.stop()
    await second.stop()


async def test_shards_are_taken_again_as_soon_as_the_database_answers_again(dsn: str) -> None:
    # A server restart: the session is ended and the first attempts to reconnect are
    # refused. The keeper asks again with backoff, not at the heartbeat's pace, and takes its
    # shards back at once: every site stands still until it does.
    recorder = Recorder()
    ttl = 6.0  # a beat every 2 s
    worker = keeper(dsn, "w-a", recorder, ttl=ttl)
    await worker.start()
    running = asyncio.ensure_future(worker.run())
    try:
        await _until(lambda: len(recorder.taken) == SHARDS)
        refusals = 2
        start = worker.start

        async def start_while_the_server_starts_up() -> None:
            nonlocal refusals
            if refusals:
                refusals -= 1
                raise psycopg.OperationalError("the database system is starting up")
            await start()

        worker.start = start_while_the_server_starts_up  # type: ignore[method-assign]
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(
                "SELECT pg_terminate_backend(backend_pid) FROM courtier_workers WHERE id = 'w-a'"
            )
        await _until(lambda: bool(recorder.lost))  # noticed at the next beat
        lost_at = asyncio.get_running_loop().time()
        assert recorder.taken == {}
        await _until(lambda: len(recorder.taken) == SHARDS)
        assert refusals == 0
        assert asyncio.get_running_loop().time() - lost_at < ttl / 3
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await worker.stop()


async def test_a_give_back_whose_session_is_ended_meanwhile_still_finishes(dsn: str) -> None:
    # Renewing during a give-back fails once the session is gone; the give-back itself (its
    # sites' URLs put back through the frontier's own connection) must still run to its end.
    a = SlowGiver(delay=0.4)
    first = keeper(dsn, "w-a", a, ttl=0.6)
    await first.start()
    await first.beat()
    shard = min(first.held)

    async def end_the_session() -> None:
        await asyncio.sleep(0.1)
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(
                "SELECT pg_terminate_backend(backend_pid) FROM courtier_workers WHERE id = 'w-a'"
            )

    ender = asyncio.ensure_future(end_the_session())
    with pytest.raises(psycopg.OperationalError):
        await first.give_back(shard)
    await ender
    assert a.lost == [(shard, True)]
    a.delay = 0.0  # (seven more give-backs of 0.4 s would only make the test longer)
    await first.stop()  # the others go back too, each as a graceful loss
    assert sorted(a.lost) == [(s, True) for s in range(SHARDS)]


async def test_a_take_cut_short_is_completed_and_given_back_at_stop(dsn: str) -> None:
    # A stopping crawl cancels its keeper: a take cancelled after the row named this worker,
    # before the keeper counted the shard as held, left a shard locked, named ours, whose
    # sites' leases nobody released (until the next run took the shard).
    a, b = Recorder(), Recorder()
    first = keeper(dsn, "w-a", a)
    await first.start()
    await first.beat()
    shard = min(first.held)
    del first.held[shard]  # the take's row update done, the keeper's own record not
    a.taken.pop(shard)
    await first.stop()
    assert a.taken == {}
    assert (shard, True) in a.lost  # its sites' URLs went back, as for any shard given back
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(f"SELECT owner FROM {LEASES} WHERE shard = %s", (shard,)).fetchone()
    assert row == (None,)
    second = keeper(dsn, "w-b", b)
    await second.start()
    await second.beat()
    assert shard in second.held
    await second.stop()


@pytest.mark.parametrize("row", ["given back", "its dead holder's, expired"])
async def test_a_take_in_progress_is_not_ended_as_a_hung_holder(dsn: str, row: str) -> None:
    # Two workers go for the same free shard: the first has its lock and is about to name
    # itself in the row, which still reads free (or expired: a dead worker's). That is no
    # hung holder: the second must let it be, not end its session (and drop every shard it
    # holds, their sites' URLs left leased until someone takes them again).
    a, b = Recorder(), Recorder()
    first, second = keeper(dsn, "w-a", a), keeper(dsn, "w-b", b)
    await first.start()
    await second.start()
    shard = 3
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {LEASES} (shard) VALUES (%s) ON CONFLICT DO NOTHING", (shard,))
        owner = None if row == "given back" else "w-dead"
        conn.execute(
            f"UPDATE {LEASES} SET owner = %s, expires_at = 0 WHERE shard = %s", (owner, shard)
        )
    assert first._conn is not None and second._conn is not None
    assert await first._conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_LOCK_SPACE, shard))
    first._locked.add(shard)  # the first worker's take, between its lock and its row update
    assert await second._try_take(second._conn, shard, True) is None
    await first._conn.execute("SELECT 1")  # its session lives on
    assert await first._try_take(first._conn, shard, True) is not None
    await first.stop()
    await second.stop()


async def test_a_hung_holder_that_named_itself_is_still_ended(dsn: str) -> None:
    # The rule above must not spare a real hung holder: the row names it, it expired, and
    # the lock is still its session's.
    a, b = Recorder(), Recorder()
    hung, rescuer = keeper(dsn, "w-hung", a), keeper(dsn, "w-ok", b)
    await hung.start()
    await hung.beat()
    shard = min(hung.held)
    _expire(dsn, shard)
    await rescuer.start()
    assert rescuer._conn is not None
    assert await rescuer._try_take(rescuer._conn, shard, True) is not None
    assert hung._conn is not None
    with pytest.raises(psycopg.OperationalError):
        await hung._conn.execute("SELECT 1")
    await rescuer.stop()
