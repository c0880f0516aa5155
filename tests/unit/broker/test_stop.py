"""Stopping a broker: whatever fails on the way (a name server that cannot be told, an offsets file
that cannot be written), the other files are still written and the store is closed cleanly; a
broker that never loaded its configs writes none of them over the real files."""

from __future__ import annotations

import asyncio
import logging
import os

from pyrocketmq.broker.app import Broker
from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.remoting.body import TopicConfig

from .test_metrics import make_broker


def test_a_failing_step_does_not_skip_the_others(tmp_path, caplog):
    b = make_broker(tmp_path)
    b.topics.update(TopicConfig("Kept", 2, 2, 6))
    os.remove(b.topics.path)  # written again at stop, even though steps before it fail

    async def unreachable():
        raise ConnectionError("no name server")

    def broken_disk(force=False):
        raise OSError("disk full")

    b.registrar.unregister_all = unreachable
    b.offsets.persist = broken_disk
    abort = b.settings.store.abort_path
    assert os.path.exists(abort)
    with caplog.at_level(logging.ERROR, "pyrocketmq.broker"):
        asyncio.run(b.stop())
    assert not os.path.exists(abort), "the store was not shut down cleanly"
    assert os.path.exists(b.topics.path) and "Kept" in open(b.topics.path).read()
    failed = [r.getMessage() for r in caplog.records]
    assert any("unregistering from the name servers failed" in m for m in failed)
    assert any("persisting consumer offsets failed" in m for m in failed)


def test_a_broker_that_never_loaded_writes_no_config(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "topics.json").write_text('{"topicConfigTable":{"Precious":{"topicName":"Precious"}}}')
    b = Broker(BrokerSettings.from_conf({"storePathRootDir": str(tmp_path), "namesrvAddr": "127.0.0.1:1"}))
    asyncio.run(b.stop())
    assert "Precious" in (config / "topics.json").read_text()
