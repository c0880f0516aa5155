"""The synchronous storage engine (commitlog, consume queues, flush, retention, recovery).

Public surface: :class:`MessageStore` and the values it takes and returns; the modules behind it
are importable for tests and tools. No asyncio and no transport here (import-linter enforces it).
"""

from pyrocketmq.remoting.names import SCHEDULE_TOPIC

from .message_store import MessageStore
from .settings import FlushDiskType, FlushSettings, RetentionSettings, StoreSettings
from .values import GetMessageStatus, GetResult, MessageInner, PutMessageStatus, PutResult

__all__ = [
    "SCHEDULE_TOPIC",
    "FlushDiskType",
    "FlushSettings",
    "GetMessageStatus",
    "GetResult",
    "MessageInner",
    "MessageStore",
    "PutMessageStatus",
    "PutResult",
    "RetentionSettings",
    "StoreSettings",
]
