"""Subscription group configs (``config/subscriptionGroup.json``), auto-created on first use."""

from __future__ import annotations

import logging
import time

import orjson

from pyrocketmq.remoting.body import DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper
from pyrocketmq.remoting.names import SYSTEM_GROUPS, check_group_name
from pyrocketmq.server.config_checks import ConfigRefused, group_config_problem
from pyrocketmq.server.config_file import load_json_file, write_json_file

log = logging.getLogger("pyrocketmq.broker")



class SubscriptionGroupManager:
    def __init__(self, path: str, *, auto_create: bool) -> None:
        self.path = path
        self.auto_create = auto_create
        self.table: dict[str, SubscriptionGroupConfig] = {
            g: SubscriptionGroupConfig(group_name=g) for g in SYSTEM_GROUPS
        }
        self.data_version = DataVersion(timestamp=int(time.time() * 1000), counter=0)

    def load(self) -> None:
        doc = load_json_file(self.path)
        if doc is None:
            return
        wrapper = SubscriptionGroupWrapper.from_json(orjson.dumps(doc))
        self.table.update(wrapper.subscription_group_table)
        if wrapper.data_version is not None:
            self.data_version = wrapper.data_version

    def persist(self) -> None:
        wrapper = SubscriptionGroupWrapper(
            subscription_group_table=dict(self.table), data_version=self.data_version
        )
        write_json_file(self.path, orjson.loads(wrapper.to_json()))

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; created with defaults when auto-creation is on."""
        config = self.table.get(group)
        if config is None and self.auto_create and check_group_name(group) is None:
            config = SubscriptionGroupConfig(group_name=group)
            self.update(config)
        return config

    def update(self, config: SubscriptionGroupConfig) -> None:
        """Create or replace a group; :class:`ConfigRefused` (nothing stored) when the config is invalid."""
        problem = group_config_problem(config)
        if problem is not None:
            raise ConfigRefused(f"subscription group {config.group_name[:64]!r} refused: {problem}")
        self.table[config.group_name] = config
        self._next_version()
        log.info("subscription group %s saved", config.group_name)
        self.persist()

    def is_system(self, group: str) -> bool:
        """A group every broker has from the start; clients may not delete it."""
        return group in SYSTEM_GROUPS

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self._next_version()  # slaves replace their table when the version moves (so they drop it too)
        self.persist()
        return True

    def _next_version(self) -> None:
        self.data_version = DataVersion(
            timestamp=int(time.time() * 1000), counter=self.data_version.counter + 1
        )
