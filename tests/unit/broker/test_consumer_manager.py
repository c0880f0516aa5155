"""Consumer groups from heartbeats: what counts as a change (members notified) and channel expiry."""

from __future__ import annotations

from pyrocketmq.broker.client_manager import ConsumerManager
from pyrocketmq.remoting.body import ConsumerData, SubscriptionData


def _data(group="g", topics=("T",), version=1) -> ConsumerData:
    return ConsumerData(
        group_name=group,
        consume_type="CONSUME_PASSIVELY",
        message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_LAST_OFFSET",
        subscription_data_set=[SubscriptionData.build(t, "*", version) for t in topics],
    )


def test_new_member_and_new_topics_are_changes_repeated_heartbeats_are_not():
    m = ConsumerManager()
    assert m.register("c1", "conn1", 0, 407, _data()) is True
    assert m.register("c1", "conn1", 0, 407, _data()) is False
    assert m.register("c2", "conn2", 0, 407, _data()) is True
    assert m.register("c2", "conn2", 0, 407, _data(topics=("T", "U"))) is True
    assert m.register("c2", "conn2", 0, 407, _data(topics=("U",))) is True
    assert m.find("g").client_ids() == ["c1", "c2"]


def test_leaving_reports_the_group():
    m = ConsumerManager()
    m.register("c1", "conn1", 0, 407, _data())
    m.register("c2", "conn2", 0, 407, _data())
    assert m.remove_connection("conn1") == ["g"]
    assert m.find("g").client_ids() == ["c2"]
    assert m.unregister("conn2", "g") is True
    assert m.find("g") is None


def test_silent_channels_expire_after_the_timeout():
    m = ConsumerManager(channel_expiry_ms=120_000)
    m.register("c1", "conn1", 0, 407, _data())
    m.register("c2", "conn2", 0, 407, _data())
    t0 = m.find("g").channels["conn1"].last_update_ms
    m.find("g").channels["conn2"].last_update_ms = t0 + 60_000
    assert m.scan_expired(t0 + 120_000) == []
    assert m.scan_expired(t0 + 120_001) == [("g", "conn1")]
    assert m.find("g").client_ids() == ["c2"]
    assert m.scan_expired(t0 + 200_000) == [("g", "conn2")]
    assert m.find("g") is None
