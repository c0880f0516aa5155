"""The broker's topic table: what topics exist here, with how many queues and which permissions.

Persisted to ``config/topics.json`` in RocketMQ's own shape (``TopicConfigSerializeWrapper``:
``{"topicConfigTable":{…},"dataVersion":{…}}``) so the file reads the same as a Java broker's. Every
change bumps the data version; the broker re-registers with the name servers when it changes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import orjson

from pyrocketmq.remoting.body import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from pyrocketmq.remoting.names import (
    AUTO_CREATE_TOPIC,
    BENCHMARK_TOPIC,
    OFFSET_MOVED_EVENT,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    SCHEDULE_TOPIC,
    SELF_TEST_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    is_system_topic,
)
from pyrocketmq.server.config_checks import ConfigRefused, topic_config_problem
from pyrocketmq.server.config_file import load_json_file, write_json_file

log = logging.getLogger("pyrocketmq.broker")

class TopicConfigManager:
    """Topic configs of one broker, their data version and their file."""

    def __init__(
        self,
        path: str,
        *,
        cluster_name: str,
        broker_name: str,
        auto_create_topic: bool,
        default_queue_nums: int,
        trace_topic: str | None = None,
    ) -> None:
        self.path = path
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion(timestamp=int(time.time() * 1000), counter=0)
        #: Called after any change (the broker re-registers with the name servers).
        self.on_change: Callable[[], None] | None = None
        #: The broker's own topics besides the fixed system set (Java ``TopicValidator.addSystemTopic``).
        self.own_topics = frozenset({cluster_name, broker_name})
        self._system_defaults(cluster_name, broker_name, auto_create_topic, default_queue_nums)
        if trace_topic:  # traceTopicEnable: clients' message traces (Apache creates it with one queue)
            self.table[trace_topic] = TopicConfig(
                topic_name=trace_topic, read_queue_nums=1, write_queue_nums=1
            )

    def _system_defaults(self, cluster: str, broker: str, auto_create: bool, queues: int) -> None:
        def put(name: str, r: int, w: int, perm: int = PERM_READ | PERM_WRITE) -> None:
            self.table[name] = TopicConfig(topic_name=name, read_queue_nums=r, write_queue_nums=w, perm=perm)

        put(SELF_TEST_TOPIC, 1, 1)
        if auto_create:
            put(AUTO_CREATE_TOPIC, queues, queues, PERM_READ | PERM_WRITE | PERM_INHERIT)
        put(BENCHMARK_TOPIC, 1024, 1024)
        put(cluster, 16, 16, PERM_READ | PERM_WRITE | PERM_INHERIT)
        put(broker, 1, 1, PERM_READ | PERM_WRITE | PERM_INHERIT)
        put(OFFSET_MOVED_EVENT, 1, 1)
        put(SCHEDULE_TOPIC, 18, 18)
        put(TRANS_HALF_TOPIC, 1, 1)
        put(TRANS_OP_HALF_TOPIC, 1, 1)

    # -- persistence -----------------------------------------------------------------------------
    def load(self) -> None:
        doc = load_json_file(self.path)
        if doc is None:
            return
        wrapper = TopicConfigSerializeWrapper.from_json(orjson.dumps(doc))
        self.table.update(wrapper.topic_config_table)
        if wrapper.data_version is not None:
            self.data_version = wrapper.data_version
        log.info("loaded %d topic configs from %s", len(wrapper.topic_config_table), self.path)

    def persist(self) -> None:
        write_json_file(self.path, orjson.loads(self.wrapper().to_json()))

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(
            topic_config_table=dict(self.table), data_version=self.data_version
        )

    def _changed(self) -> None:
        self.data_version = DataVersion(
            timestamp=int(time.time() * 1000), counter=self.data_version.counter + 1
        )
        self.persist()
        if self.on_change is not None:
            self.on_change()

    # -- queries and changes --------------------------------------------------------------------
    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_system(self, topic: str) -> bool:
        """A topic clients may not create, update or delete: the system set and this broker's own
        cluster-name and broker-name topics."""
        return is_system_topic(topic) or topic in self.own_topics

    def update(self, config: TopicConfig) -> None:
        """Create or replace a topic; :class:`ConfigRefused` (nothing stored) when the config is invalid."""
        problem = topic_config_problem(config)
        if problem is not None:
            raise ConfigRefused(f"topic {config.topic_name[:64]!r} refused: {problem}")
        old = self.table.get(config.topic_name)
        self.table[config.topic_name] = config
        log.info("topic %s %s: %s", config.topic_name, "updated" if old else "created", config)
        self._changed()

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        log.info("topic %s deleted", topic)
        self._changed()
        return True

    def create_in_send(
        self, topic: str, default_topic: str, queue_nums: int, sys_flag: int
    ) -> TopicConfig | None:
        """A producer sent to an unknown topic through ``default_topic`` (TBW102): create it, if allowed."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        default = self.table.get(default_topic)
        if default is None or default_topic != AUTO_CREATE_TOPIC or not default.perm & PERM_INHERIT:
            return None
        queues = max(1, min(queue_nums, default.write_queue_nums))
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=default.perm & ~PERM_INHERIT,
            topic_sys_flag=sys_flag,
        )
        self.update(config)
        return config

    def create_in_send_back(self, topic: str, queue_nums: int, perm: int, sys_flag: int = 0) -> TopicConfig:
        """Retry and DLQ topics are created by the broker itself when first needed."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=perm,
            topic_sys_flag=sys_flag,
        )
        self.update(config)
        return config
