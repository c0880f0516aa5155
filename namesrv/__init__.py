"""The name server: a route registry that brokers register with and clients ask for routes.

Public surface: :class:`NameServer` (the process), :class:`NamesrvSettings`, and the pure state
:class:`RouteInfoManager` / :class:`KVConfigManager`.
"""

from .app import NameServer, main
from .kv_config import KVConfigManager
from .route_info import RouteInfoManager
from .settings import NamesrvSettings

__all__ = ["KVConfigManager", "NameServer", "NamesrvSettings", "RouteInfoManager", "main"]
