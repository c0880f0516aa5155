"""The synchronous storage engine (commitlog, consume queues, flush, retention, recovery).

Public surface: :class:`MessageStore`, the values it takes and returns, and ``send_properties`` (a
send's properties made into what a record holds); processors use nothing else of it. The modules
behind it are importable for tests and tools. No asyncio and no transport here (import-linter enforces it).
"""

from pyrocketmq.remoting.names import SCHEDULE_TOPIC

from .message_store import MessageStore
from .native import send_properties
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
    "send_properties",
]
