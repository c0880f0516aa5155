"""Per-user quotas, the pure accounting (:mod:`pyrocketmq.broker.quota`) and its file
(:mod:`pyrocketmq.broker.quota_store`): rates kept by delays, the burst, debt carried past the cap,
no quota no delay."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.quota import (
    Bucket,
    Quota,
    QuotaError,
    QuotaTable,
    quotas_from_doc,
    quotas_to_doc,
)
from pyrocketmq.broker.quota_store import QuotaStore


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def table(clock: Clock, **quotas: Quota) -> QuotaTable:
    return QuotaTable(quotas, clock=clock)


def sync_client(t: QuotaTable, clock: Clock, seconds: float, *, produced: int = 0, consumed: int = 0,
                think: float = 0.001) -> int:
    """A client that waits for each answer (delayed as told) and sends the next ``think`` s later:
    the requests it got through in ``seconds``."""
    end = clock.now + seconds
    n = 0
    while clock.now < end:
        delay = t.charge("alice", produced=produced, consumed=consumed)
        n += 1
        clock.now += delay + think
    return n


def test_no_quota_no_delay_but_counted() -> None:
    clock = Clock()
    t = table(clock)
    assert all(t.charge("bob", produced=1 << 20) == 0.0 for _ in range(1000))
    bob = t.meters["bob"]
    assert (bob.produced_bytes, bob.request_count) == (1000 << 20, 1000)
    assert (bob.throttled, bob.throttle_seconds) == (0, 0)
    assert not bob.limited and t.get("bob") is None


def test_a_user_without_a_quota_is_not_touched_by_anothers() -> None:
    clock = Clock()
    t = table(clock, alice=Quota(produced_bytes_per_second=1000))
    for _ in range(100):
        assert t.charge("bob", produced=10_000) == 0.0
        t.charge("alice", produced=10_000)
    assert t.meters["bob"].throttled == 0 and t.meters["alice"].throttled > 0


@pytest.mark.parametrize("rate,size", [(50 * 1024, 1024), (1000, 100), (10_000, 3000)])
def test_produced_bytes_keep_to_the_rate(rate: int, size: int) -> None:
    clock = Clock()
    t = table(clock, alice=Quota(produced_bytes_per_second=rate))
    seconds = 20.0
    n = sync_client(t, clock, seconds, produced=size)
    measured = n * size / seconds
    # the rate, plus one second of burst spread over the run (and one message of rounding)
    assert rate <= measured <= rate * (1 + 1 / seconds) + size / seconds + 1


def test_consumed_bytes_and_requests_keep_to_theirs() -> None:
    clock = Clock()
    t = table(clock, alice=Quota(consumed_bytes_per_second=2000, requests_per_second=50))
    n = sync_client(t, clock, 10.0, consumed=10)  # 50 requests a second bind (200 pulls of 10 B allowed)
    assert 500 <= n <= 550
    clock2 = Clock()
    t2 = table(clock2, alice=Quota(consumed_bytes_per_second=2000, requests_per_second=50))
    n2 = sync_client(t2, clock2, 10.0, consumed=1000)  # now 2 pulls a second bind
    assert 20 <= n2 <= 23


def test_a_second_of_burst_is_free_then_each_request_waits_its_share() -> None:
    clock = Clock()
    t = table(clock, alice=Quota(requests_per_second=5))
    assert [t.charge("alice") for _ in range(7)] == [0.0] * 5 + [0.2, 0.4]
    assert t.meters["alice"].throttled == 2
    assert t.meters["alice"].throttle_seconds == pytest.approx(0.6)


def test_idle_time_refills_the_burst_but_no_more() -> None:
    clock = Clock()
    t = table(clock, alice=Quota(requests_per_second=5))
    for _ in range(5):
        t.charge("alice")
    clock.now += 60.0  # a minute idle: one second's worth back, not sixty
    assert [t.charge("alice") for _ in range(6)] == [0.0] * 5 + [0.2]


def test_a_delay_is_capped_and_the_rest_of_the_debt_carried_to_the_next_requests() -> None:
    clock = Clock()
    t = table(clock, alice=Quota(produced_bytes_per_second=1000))
    assert t.charge("alice", produced=5000) == 1.0  # 4 s owed: 1 s now
    clock.now += 1.0
    assert t.charge("alice", produced=1) == 1.0  # 3.001 s owed
    clock.now += 1.0
    assert t.charge("alice", produced=1) == 1.0
    clock.now += 1.0
    assert t.charge("alice", produced=1) == 1.0  # 1.003 s owed, capped
    clock.now += 3.0
    assert t.charge("alice", produced=1) == 0.0  # paid back, burst refilled
    assert t.meters["alice"].throttled == 4


def test_the_cap_is_the_tables() -> None:
    clock = Clock()
    t = QuotaTable({"alice": Quota(produced_bytes_per_second=1000)}, clock=clock, max_delay=0.25)
    assert t.charge("alice", produced=5000) == 0.25


def test_a_pull_is_not_held_back_by_its_users_send_debt() -> None:
    clock = Clock()
    t = table(clock, alice=Quota(produced_bytes_per_second=1000, consumed_bytes_per_second=1000))
    assert t.charge("alice", produced=3000) > 0
    assert t.charge("alice", consumed=10) == 0.0


def test_pipelined_requests_are_each_held_a_little_longer() -> None:
    clock = Clock()
    t = table(clock, alice=Quota(produced_bytes_per_second=1000))
    delays = [t.charge("alice", produced=100) for _ in range(15)]  # 15 sends in flight at once
    assert delays[:10] == [0.0] * 10
    assert delays[10:] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])


def test_a_new_quota_starts_with_a_full_bucket_and_removing_it_stops_delays() -> None:
    clock = Clock()
    t = table(clock, alice=Quota(requests_per_second=1))
    t.charge("alice")
    assert t.charge("alice") == 1.0
    t.set("alice", Quota(requests_per_second=2))
    assert [t.charge("alice") for _ in range(3)] == [0.0, 0.0, 0.5]
    assert t.remove("alice") and not t.remove("alice")
    assert t.charge("alice") == 0.0 and t.meters["alice"].request_count == 6
    t.set("alice", Quota())  # unlimited: no quota at all
    assert t.get("alice") is None


def test_bucket_refills_at_its_rate_up_to_its_capacity() -> None:
    b = Bucket(rate=10, capacity=10, now=0.0)
    assert b.charge(25, now=0.0) == 1.5
    assert b.charge(0, now=1.0) == 0.5
    assert b.charge(0, now=100.0) == 0.0 and b.tokens == 10


def test_quota_info_merges_and_checks() -> None:
    q = Quota.from_info({"producedBytesPerSecond": 51200, "requestsPerSecond": 2.5})
    assert q == Quota(produced_bytes_per_second=51200, requests_per_second=2.5)
    assert q.to_info() == {"producedBytesPerSecond": 51200, "consumedBytesPerSecond": 0,
                           "requestsPerSecond": 2.5}
    assert q.merged({"username": "alice", "requestsPerSecond": 0}) == Quota(produced_bytes_per_second=51200)
    for bad, why in [({"bytesPerSecond": 1}, "unknown quota field 'bytesPerSecond'"),
                     ({"requestsPerSecond": -1}, r"must be 0 \(no limit\) or more"),
                     ({"requestsPerSecond": "10"}, "must be a number"),
                     ({"requestsPerSecond": True}, "must be a number"),
                     ({"requestsPerSecond": float("inf")}, r"must be 0 \(no limit\) or more")]:
        with pytest.raises(QuotaError, match=why):
            Quota.from_info(bad)


def test_the_document_round_trips_and_a_bad_one_names_its_entry() -> None:
    t = QuotaTable({"bob": Quota(requests_per_second=3), "alice": Quota(consumed_bytes_per_second=10)})
    doc = quotas_to_doc(t)
    assert [e["username"] for e in doc["quotas"]] == ["alice", "bob"]
    assert quotas_from_doc(doc) == {"alice": Quota(consumed_bytes_per_second=10),
                                    "bob": Quota(requests_per_second=3)}
    assert quotas_from_doc(None) == {}
    with pytest.raises(QuotaError, match=r"quotas\[1\] \(bob\): requestsPerSecond must be"):
        quotas_from_doc({"quotas": [{"username": "alice"}, {"username": "bob", "requestsPerSecond": -2}]})
    with pytest.raises(QuotaError, match="no username"):
        quotas_from_doc({"quotas": [{"requestsPerSecond": 2}]})
    with pytest.raises(QuotaError, match="expected"):
        quotas_from_doc([1, 2])


def test_the_store_persists_each_change(tmp_path) -> None:
    store = QuotaStore(str(tmp_path))
    store.load()  # no file yet: no quotas
    assert store.update("alice", {"producedBytesPerSecond": 51200}) == Quota(produced_bytes_per_second=51200)
    assert store.update("alice", {"requestsPerSecond": 10}) == Quota(51200, 0, 10)
    store.update("bob", {"consumedBytesPerSecond": 1000})
    assert store.delete("bob") and not store.delete("bob")
    again = QuotaStore(str(tmp_path))
    again.load()
    assert dict(again.table.items()) == {"alice": Quota(51200, 0, 10)}
    (tmp_path / "quotas.json").write_text('{"quotas": [{"username": "x", "requestsPerSecond": "lots"}]}')
    (tmp_path / "quotas.json.bak").unlink()
    with pytest.raises(QuotaError, match="quotas.json: quotas\\[0\\] \\(x\\)"):
        QuotaStore(str(tmp_path)).load()
