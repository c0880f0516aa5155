"""UPDATE_BROKER_CONFIG (mqadmin ``updateBrokerConfig``): the settings a running broker can change.

Only settings the broker reads afresh each time it uses them are taken; any other key refuses the
whole update with the list of keys that can change (changing them means editing ``broker.conf``, or
``spec.config`` of a Broker resource, and a restart). Values are checked before anything changes,
so an update is applied whole or not at all. The change lasts until the broker restarts:
``broker.conf`` is not rewritten (on Kubernetes it is a read-only ConfigMap).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .store.settings import StoreSettings


@dataclass(frozen=True, slots=True)
class HotKey:
    group: str
    """``""`` (the store settings themselves), ``retention``, ``flush`` or ``index``."""
    field: str
    parse: Callable[[str], Any]


def _int_in(low: int, high: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = int(raw)
        if not low <= value <= high:
            raise ValueError(f"expected {low}..{high}")
        return value
    return parse


def _bool(raw: str) -> bool:
    if raw.lower() not in ("true", "false"):
        raise ValueError("expected true or false")
    return raw.lower() == "true"


def _hours(raw: str) -> str:
    if not re.fullmatch(r"\d{1,2}(;\d{1,2})*", raw) or any(int(h) > 23 for h in raw.split(";")):
        raise ValueError("expected hours of the day like 04 or 04;16")
    return raw


HOT_KEYS: dict[str, HotKey] = {
    "fileReservedTime": HotKey("retention", "file_reserved_time", _int_in(1, 24 * 365)),
    "deleteWhen": HotKey("retention", "delete_when", _hours),
    "diskMaxUsedSpaceRatio": HotKey("retention", "disk_max_used_space_ratio", _int_in(10, 95)),
    "cleanFileForciblyEnable": HotKey("retention", "clean_file_forcibly_enable", _bool),
    "syncFlushTimeout": HotKey("flush", "sync_flush_timeout", _int_in(1, 600_000)),
    "timerMaxDelaySec": HotKey("", "timer_max_delay_sec", _int_in(1, 10 * 365 * 86_400)),
    "recallMessageEnable": HotKey("", "recall_message_enable", _bool),
    "maxMsgsNumBatch": HotKey("index", "max_msgs_num_batch", _int_in(1, 10_000)),
    "defaultQueryMaxNum": HotKey("index", "default_query_max_num", _int_in(1, 10_000)),
}


class ConfigRefused(ValueError):
    """The update cannot be applied; the message says what to do."""


def apply_updates(
    store: StoreSettings, updates: Mapping[str, str], effective: dict[str, str]
) -> dict[str, str]:
    """Apply ``updates`` to ``store`` (and record them in ``effective``, what GET_BROKER_CONFIG shows);
    returns what changed. ConfigRefused, with nothing changed, for an unknown or invalid key."""
    if not updates:
        raise ConfigRefused("no key=value given")
    cold = sorted(k for k in updates if k not in HOT_KEYS)
    if cold:
        raise ConfigRefused(
            f"{', '.join(k[:64] for k in cold[:10])} cannot change while the broker runs; these can: "
            f"{', '.join(sorted(HOT_KEYS))}. Change the others in broker.conf (on Kubernetes: "
            "spec.config of the Broker, which rolls its pods)"
        )
    parsed: dict[str, Any] = {}
    for key, raw in updates.items():
        try:
            parsed[key] = HOT_KEYS[key].parse(raw.strip())
        except ValueError as e:
            raise ConfigRefused(f"{key}={raw.strip()[:64]!r}: {e}") from None
    changed = {}
    for key, value in parsed.items():
        spec = HOT_KEYS[key]
        target = getattr(store, spec.group) if spec.group else store
        setattr(target, spec.field, value)
        text = str(value).lower() if isinstance(value, bool) else str(value)
        effective[key] = changed[key] = text
    return changed
