"""What each name server request needs from the ACL: request code → :class:`~.acl_table.Rule`, the
name server's table beside the broker's (:data:`~.acl_table.BROKER_RULES`), read by the same
:func:`~.acl_table.rule_needs` (ACL 1.0) and :func:`~.acl_table.acl2_asks` (ACL 2.0). Pure, no
I/O. ``tests/unit/server/test_acl_namesrv_table.py`` holds it up against every code the name server
and its controller register.

ACL 1.0 (``aclEnable``): what changes what the name server serves (registering, unregistering or
keeping a broker alive, wiping a broker's write permission, deleting a topic, writing KV config,
the controller's elections and consensus, ACL 2.0's users) needs an admin account. A topic's route
needs a right on that topic (PUB or SUB, as Apache 5 asks; a retry topic's, on its group): an
account kept out of a topic does not learn where it lives. The other reads need any authenticated
account.

ACL 2.0 (``authorizationEnabled``), by request::

    GET_ROUTEINFO_BY_TOPIC             Pub or Sub on Topic:<topic>  (%RETRY%<g>: Sub on Group:<g>;
                                       the auto-create template TBW102: nothing)
    REGISTER_BROKER, UNREGISTER_BROKER,
    QUERY_DATA_VERSION                 Update on Cluster:<clusterName>  (a broker's own writes)
    WIPE_WRITE_PERM_OF_BROKER,
    PUT_KV_CONFIG, DELETE_KV_CONFIG,
    controller writes and consensus    Update on Cluster:*
    DELETE_TOPIC_IN_NAMESRV            Delete on Topic:<topic>  (as the broker's DELETE_TOPIC_IN_BROKER)
    GET_TOPICS_BY_CLUSTER              List on Cluster:<cluster>
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    GET_SYSTEM_TOPIC_LIST_FROM_NS      List on Cluster:*
    GET_BROKER_CLUSTER_INFO, KV reads,
    the controller's metadata          Get on Cluster:*
    AUTH_* (3001-3010)                 Update or Get on Cluster:*, and a super user (their handler)

A name server serves every cluster, so a request that names none is judged on ``Cluster:*``
(:data:`~.acl_table.ALL_CLUSTERS`): only an entry for ``Cluster:*`` (or ``*``) covers it. Super users
(the brokers' ``innerClientAuthenticationCredentials`` among them) may do anything.

>>> from pyrocketmq.server.acl_table import acl2_asks
>>> route = RemotingCommand.request(C.GET_ROUTEINFO_BY_TOPIC, {"topic": "orders"})
>>> [(r.key, [a.value for a in acts]) for r, acts in acl2_asks(NAMESRV_RULES, route, "")]
[('Topic:orders', ['Pub', 'Sub'])]
"""

from __future__ import annotations

from pyrocketmq.remoting.code import RequestCode as C
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import DeleteTopicRequestHeader
from pyrocketmq.remoting.names import AUTO_CREATE_TOPIC
from pyrocketmq.remoting.namesrv_header import (
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)

from .acl2 import CLUSTER_GET as _GET, CLUSTER_UPDATE as _UPDATE, Action, Acts
from .acl_perm import ANY, SUB, Needs, is_group_resource
from .acl_table import AUTH_RULES, Rule, rule_needs

_TOPIC_RPC = frozenset({"lo", "ns", "nsd", "oway"})
"""Apache 5's ``TopicRequestHeader`` fields beside ``bname`` (logical queue, namespace, namespaced,
one-way), sent when a client sets them; nothing here reads them."""


def _route(cmd: RemotingCommand) -> Needs:
    """A topic's route: any right on the topic (Apache 5 asks the same), which for a retry topic
    (``%RETRY%<group>``) is a right on its group. The auto-create template (``TBW102``) holds no
    messages: a producer asks its route to send to a topic the brokers have not made yet, and its
    send is checked against the topic it names."""
    topic = GetRouteInfoRequestHeader.from_command(cmd).topic
    return {} if topic == AUTO_CREATE_TOPIC else {topic: ANY}


def _routed(cmd: RemotingCommand) -> Needs:
    """ACL 2.0's view of :func:`_route`: a retry topic's route asks Sub on its group (a consumer
    group's own topic), any other Pub or Sub on the topic."""
    return {topic: SUB if is_group_resource(topic) else perm for topic, perm in _route(cmd).items()}


def _deleted_topic(cmd: RemotingCommand) -> Needs:
    return {DeleteTopicRequestHeader.from_command(cmd).topic: ANY}


def _registering(cmd: RemotingCommand) -> str:
    return RegisterBrokerRequestHeader.from_command(cmd).cluster_name


def _unregistering(cmd: RemotingCommand) -> str:
    return UnRegisterBrokerRequestHeader.from_command(cmd).cluster_name


def _alive(cmd: RemotingCommand) -> str:
    return QueryDataVersionRequestHeader.from_command(cmd).cluster_name


def _listed(cmd: RemotingCommand) -> str:
    return GetTopicsByClusterRequestHeader.from_command(cmd).cluster


_LIST = Acts(cluster=(Action.LIST,))

NAMESRV_RULES: dict[int, Rule] = {
    # -- brokers: what a broker (signing with an admin account, a super user) says about itself
    C.REGISTER_BROKER: Rule(
        RegisterBrokerRequestHeader, admin=True, acts=Acts(cluster=(Action.UPDATE,), cluster_of=_registering),
        tolerated=frozenset({"heartbeatTimeoutMillis", "enableActingMaster"}),
    ),  # 5.x brokers'
    C.UNREGISTER_BROKER: Rule(UnRegisterBrokerRequestHeader, admin=True,
                              acts=Acts(cluster=(Action.UPDATE,), cluster_of=_unregistering)),
    C.QUERY_DATA_VERSION: Rule(
        QueryDataVersionRequestHeader, admin=True, acts=Acts(cluster=(Action.UPDATE,), cluster_of=_alive)
    ),  # a sign of life: keeps a broker routed
    C.WIPE_WRITE_PERM_OF_BROKER: Rule(WipeWritePermOfBrokerRequestHeader, admin=True, acts=_UPDATE),
    # -- topics and KV config: changes
    C.DELETE_TOPIC_IN_NAMESRV: Rule(
        DeleteTopicRequestHeader, admin=True, acts=Acts(names=_deleted_topic, any_topic=(Action.DELETE,))
    ),  # topic, clusterName: as Java 5.x sends
    C.PUT_KV_CONFIG: Rule(PutKVConfigRequestHeader, admin=True, acts=_UPDATE),
    C.DELETE_KV_CONFIG: Rule(DeleteKVConfigRequestHeader, admin=True, acts=_UPDATE),
    # -- reads: a topic's route needs a right on it; the rest, any authenticated account (1.0)
    C.GET_ROUTEINFO_BY_TOPIC: Rule(GetRouteInfoRequestHeader, _route, tolerated=_TOPIC_RPC,
                                   acts=Acts(names=_routed)),
    C.GET_BROKER_CLUSTER_INFO: Rule(None, acts=_GET),
    C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: Rule(None, acts=_LIST),
    C.GET_SYSTEM_TOPIC_LIST_FROM_NS: Rule(None, acts=_LIST),
    C.GET_TOPICS_BY_CLUSTER: Rule(GetTopicsByClusterRequestHeader,
                                  acts=Acts(cluster=(Action.LIST,), cluster_of=_listed)),
    C.GET_KV_CONFIG: Rule(GetKVConfigRequestHeader, acts=_GET),
    C.GET_KVLIST_BY_NAMESPACE: Rule(GetKVListByNamespaceRequestHeader, acts=_GET),
    # -- the controller (enableControllerInNamesrv): JSON bodies, no header fields
    C.CONTROLLER_BROKER_HEARTBEAT: Rule(None, admin=True, acts=_UPDATE),
    C.CONTROLLER_ALTER_SYNC_STATE_SET: Rule(None, admin=True, acts=_UPDATE),
    C.CONTROLLER_ELECT_MASTER: Rule(None, admin=True, acts=_UPDATE),
    C.CONTROLLER_RAFT_VOTE: Rule(None, admin=True, acts=_UPDATE),  # between controller instances
    C.CONTROLLER_RAFT_APPEND: Rule(None, admin=True, acts=_UPDATE),
    C.CONTROLLER_GET_METADATA_INFO: Rule(None, acts=_GET),
    # -- ACL 2.0's users and ACLs (when the name server keeps them: kvConfigPath or rocketmqHome)
    **AUTH_RULES,
}
"""Every request code the name server (and its controller) serves → its rule."""

NAMESRV_ADMIN_CODES = frozenset(code for code, rule in NAMESRV_RULES.items() if rule.admin)
"""The name server's requests that change what it serves (its controller's too): only admin accounts
(brokers register with one; controller instances sign with ``accessKey``) may send them. Apache 4.9's
name server checks nothing; with ``aclEnable`` ours does."""


def namesrv_needs(cmd: RemotingCommand) -> Needs:
    """What a name server request needs (:data:`NAMESRV_RULES`): its fields fitting its code, and a
    right on the topic of a route."""
    return rule_needs(NAMESRV_RULES, cmd)
