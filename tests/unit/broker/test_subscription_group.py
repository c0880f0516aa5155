"""SubscriptionGroupManager: every change moves the data version (a slave replaces its table only
when the master's version differs, so a deletion that kept the version never reached slaves)."""

from __future__ import annotations

from pyrocketmq.broker.subscription_group import SubscriptionGroupManager
from pyrocketmq.remoting.body import SubscriptionGroupConfig


def test_update_and_delete_move_the_data_version_and_persist(tmp_path):
    path = str(tmp_path / "subscriptionGroup.json")
    groups = SubscriptionGroupManager(path, auto_create=False)
    v0 = groups.data_version
    groups.update(SubscriptionGroupConfig(group_name="GID_A"))
    v1 = groups.data_version
    assert v1 != v0
    assert groups.delete("GID_A") is True
    v2 = groups.data_version
    assert v2 != v1 and v2.counter == v1.counter + 1
    assert groups.delete("GID_A") is False and groups.data_version == v2  # nothing deleted, same version

    reloaded = SubscriptionGroupManager(path, auto_create=False)
    reloaded.load()
    assert "GID_A" not in reloaded.table and reloaded.data_version == v2
