"""What each request needs from the ACL: one table per server, request code → :class:`Rule`.

Pure, no I/O. A rule names the header its handler decodes and, for a request that names a topic
or a group, a function that decodes the request with that *same* decoder (``XxxRequestHeader.
from_command``, or the body class the handler reads) and returns resource → permission. So the
check sees what the handler will act on: a SEND_MESSAGE in the V2 spelling is read as V2 here as
there. A request that does not decode is refused (its handler would refuse it too). A code the
broker does not serve is not in the table and needs nothing (the broker answers that it does not
serve it); ``tests/unit/server/test_acl_table.py`` checks that every code the broker registers
has a rule, so a new handler cannot slip past.

The broker's model, by family (``SUB`` on a group is the right on ``%RETRY%<group>``, as in ACL 1.0):

- send (10, 310, 320): PUB on the topic; into ``%RETRY%<g>``, SUB on group g instead; a
  transactional (prepared) send also needs any right on its producer group, which will own it.
  RECALL_MESSAGE (370) needs PUB on the topic (Apache 5.3.2, both ACLs).
- pull and consume: PULL_MESSAGE needs SUB on the topic and the group; HEART_BEAT SUB on each
  consumer group and subscribed topic and any right (PUB or SUB, not DENY) on each producer group
  (it receives that group's transaction check-backs); CONSUMER_SEND_MSG_BACK SUB on the group (and
  its handler SUB on the message's topic, known after the lookup); UNREGISTER_CLIENT,
  GET_CONSUMER_LIST_BY_GROUP and CHECK_CLIENT_CONFIG rights on the groups they name.
- offsets: reading or changing a group's offsets (QUERY/UPDATE_CONSUMER_OFFSET, reset, clone, consume
  stats, consumer status) needs SUB on the group (and on the topic when one is named); a queue's
  extents and statistics (GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME,
  GET_TOPIC_STATS_INFO, QUERY_TOPIC_CONSUME_BY_WHO) any right on the topic.
- locks: LOCK/UNLOCK_BATCH_MQ SUB on the group and on every queue's topic.
- transactions: END_TRANSACTION any right on the producer group (its handler also asks PUB on the
  half message's real topic before a commit).
- side doors to bodies: QUERY_MESSAGE SUB on the topic; VIEW_MESSAGE_BY_ID and
  CONSUME_MESSAGE_DIRECTLY find the message first, then their handlers ask SUB on its topic (for
  one waiting in an internal topic, the topic it is bound for) through
  :func:`~.acl_service.acl_refusal`; the internal topics themselves (``SCHEDULE_TOPIC_XXXX``, half
  messages…) are covered by no default permission (:mod:`.acl_perm`).
- admin: creating, changing or deleting topics, groups and the broker's configuration, and
  GET_ALL_CONSUMER_OFFSET (every group's offsets: a slave's sync) need an admin account.
- the rest names no topic or group (``OPEN``): any authenticated account.

Producer groups need *any* right, not SUB: ACL 1.0 grants groups SUB or DENY in practice, and a
producer group's DENY is what keeps an account out. The Java client heart-beats every process's
inner producer (``CLIENT_INNER_PRODUCER``) along with its own groups; that one group is exempt.

The name server has its own table beside this one, :data:`~.acl_namesrv_table.NAMESRV_RULES`,
read by the same :func:`rule_needs` and :func:`acl2_asks`.

ACL 2.0 (:mod:`.acl2`) reads the same table: each rule's :class:`Acts` turns what its decoder names
into Apache 5.3's resources and actions (``RemotingAuthorizationContextBuilder`` and the request
headers' ``@RocketMQAction``): a topic → ``Topic:<name>``, ``%RETRY%<g>`` → ``Group:<g>``, the right
into the actions that code asks (Pub, Sub, Get, Update...; one of them suffices). As in Apache 5.3, a
producer group (the 1.0 "any right" on a group) is not asked about, and some requests are judged on
the cluster (``Cluster:<brokerClusterName>``) whatever they name. Admin codes name what they create
or delete (``Acts.names``), which ACL 1.0 does not ask about (an admin account may do it all).

Replay: the ACL 1.0 signature covers the field values and the body but not the request code, so a
captured request could be sent again under another code. A request carrying a field its code's
header does not define (besides the ACL's own fields, ``bname`` and a rule's ``tolerated`` fields)
is refused, naming the field, by either table (:func:`rule_needs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pyrocketmq.remoting.acl_sign import ACL_FIELDS, UNIQUE_KEY_QUERY
from pyrocketmq.remoting.auth_header import (
    AclRequestHeader,
    DeleteAclRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UserRequestHeader,
)
from pyrocketmq.remoting.body import (
    CheckClientRequestBody,
    HeartbeatData,
    LockBatchRequestBody,
    SubscriptionGroupConfig,
    UnlockBatchRequestBody,
)
from pyrocketmq.remoting.code import RequestCode as C
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    Header,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    RecallMessageRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewBrokerStatsDataRequestHeader,
    ViewMessageRequestHeader,
)
from pyrocketmq.remoting.message import Prop, SysFlag, transaction_type
from pyrocketmq.remoting.names import TRANSACTION_GROUP_PREFIX

from .acl2 import (
    CLUSTER_GET,
    CLUSTER_UPDATE,
    GET,
    PUB_SUB,
    Action,
    Acts,
    Asks,
    Resource,
    ResourcePattern,
    ResourceType,
    translate,
)
from .acl_perm import ANY, INTERNAL_TOPICS, PUB, SUB, Needs, group_resource, is_group_resource

_T = TypeVar("_T")
INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
"""Java ``MixAll.CLIENT_INNER_PRODUCER_GROUP``: every Java client process heart-beats as it."""
ALL_CLUSTERS = Resource(ResourceType.CLUSTER, None, ResourcePattern.ANY)
"""What a name server request that spans every cluster (or names none) is judged on: only an entry
for ``Cluster:*`` (or ``*``) covers it."""
ALWAYS_TOLERATED = ACL_FIELDS | {"bname", "ReqT"}
"""Fields any request may carry: the ACL's own, ``bname`` (the broker name Java 4.9.5+ clients add
to many headers) and ``ReqT`` (the request type a Java lite pull consumer adds to every request,
``StreamTypeRPCHook``). No handler reads them."""


class RequestRefused(ValueError):
    """The request cannot be judged: it does not decode as its handler reads it, or carries a field
    its code does not take. The message is the refusal's reason."""


@dataclass(frozen=True, slots=True)
class Rule:
    """What one request code needs."""

    header: type[Header] | None = None
    """The header its handler decodes; its wire keys are the fields the request may carry
    (None: the request carries no header fields)."""
    needs: Callable[[RemotingCommand], Needs] | None = None
    """Decodes the request as the handler does and names what it needs; None: it names no topic or
    group (admin codes need the admin flag; the others, an authenticated account)."""
    admin: bool = False
    tolerated: frozenset[str] = frozenset()
    """Fields real clients send that the handler does not read."""
    acts: Acts = PUB_SUB
    """What it asks of ACL 2.0."""

    def stray_field(self, cmd: RemotingCommand) -> str | None:
        """The first (by name) field of ``cmd`` its code does not take, or None."""
        allowed = self.header.wire_keys(cmd) if self.header is not None else frozenset()
        stray = [
            k
            for k in cmd.ext_fields
            if k not in allowed and k not in self.tolerated and k not in ALWAYS_TOLERATED
        ]
        return min(stray) if stray else None


_Want = tuple[str | None, int]


def _needs(*wants: _Want) -> Needs:
    """Resource → permission from ``(resource, perm)`` pairs (a None resource is left out); a specific
    permission outranks ANY on the same resource."""
    out: Needs = {}
    for resource, perm in wants:
        if resource is None:
            continue
        have = out.get(resource)
        if have is None or have == ANY:
            out[resource] = perm
        elif perm not in (ANY, have):  # no request needs both PUB and SUB on one resource
            raise RequestRefused(f"the request needs both PUB and SUB on {resource[:255]}")
    return out


def _group(name: str | None, perm: int = SUB) -> _Want:
    return (None if name is None else group_resource(name)), perm


def _producer(name: str | None) -> _Want:
    """Any right on a producer group a client acts as (the Java client's inner producer exempt); the
    group of a topic's 5.x publishers (``%GRPC%<topic>``, whose check-backs it would receive) needs
    PUB on that topic, as the 5.x endpoint asks of a producer announcing it."""
    if name and name.startswith(TRANSACTION_GROUP_PREFIX):
        return name[len(TRANSACTION_GROUP_PREFIX):], PUB
    return _group(name if name and name != INNER_PRODUCER_GROUP else None, ANY)


# -- send, pull, consume ------------------------------------------------------------------------
def _send(cmd: RemotingCommand) -> Needs:
    h = SendMessageRequestHeader.from_command(cmd)
    prepared = transaction_type(h.sys_flag) == SysFlag.TRANSACTION_PREPARED
    return _needs((h.topic, SUB if is_group_resource(h.topic) else PUB),  # %RETRY%<g>: group g's own
                  _group(h.producer_group if prepared else None, ANY))


def _recall(cmd: RemotingCommand) -> Needs:
    return _needs((RecallMessageRequestHeader.from_command(cmd).topic, PUB))


def _pull(cmd: RemotingCommand) -> Needs:
    h = PullMessageRequestHeader.from_command(cmd)
    return _needs((h.topic, SUB), _group(h.consumer_group))


def _send_back(cmd: RemotingCommand) -> Needs:
    return _needs(_group(ConsumerSendMsgBackRequestHeader.from_command(cmd).group))


def _heartbeat(cmd: RemotingCommand) -> Needs:
    data = HeartbeatData.from_json(cmd.payload or b"{}")
    wants = [_producer(p.group_name) for p in data.producer_data_set]
    for consumer in data.consumer_data_set:
        wants.append(_group(consumer.group_name))
        wants += [(sub.topic, SUB) for sub in consumer.subscription_data_set]
    return _needs(*wants)


def _unregister(cmd: RemotingCommand) -> Needs:
    h = UnregisterClientRequestHeader.from_command(cmd)
    return _needs(_producer(h.producer_group), _group(h.consumer_group or None))


def _consumer_list(cmd: RemotingCommand) -> Needs:
    return _needs(_group(GetConsumerListByGroupRequestHeader.from_command(cmd).consumer_group))


def _check_client(cmd: RemotingCommand) -> Needs:
    body = CheckClientRequestBody.from_json(cmd.payload or b"{}")
    sub = body.subscription_data
    return _needs(_group(body.group), (None if sub is None else sub.topic, SUB))


def _lock(cmd: RemotingCommand) -> Needs:
    body = LockBatchRequestBody.from_json(cmd.payload or b"{}")
    return _needs(_group(body.consumer_group), *((mq.topic, SUB) for mq in body.mq_set))


def _unlock(cmd: RemotingCommand) -> Needs:
    body = UnlockBatchRequestBody.from_json(cmd.payload or b"{}")
    return _needs(_group(body.consumer_group), *((mq.topic, SUB) for mq in body.mq_set))


# -- a group's offsets --------------------------------------------------------------------------
def _query_offset(cmd: RemotingCommand) -> Needs:
    h = QueryConsumerOffsetRequestHeader.from_command(cmd)
    return _needs(_group(h.consumer_group), (h.topic, SUB))


def _update_offset(cmd: RemotingCommand) -> Needs:
    h = UpdateConsumerOffsetRequestHeader.from_command(cmd)
    return _needs(_group(h.consumer_group), (h.topic, SUB))


def _reset_offset(cmd: RemotingCommand) -> Needs:
    h = ResetOffsetRequestHeader.from_command(cmd)
    return _needs(_group(h.group), (h.topic, SUB))


def _clone_offsets(cmd: RemotingCommand) -> Needs:
    h = CloneGroupOffsetRequestHeader.from_command(cmd)
    return _needs(_group(h.src_group), _group(h.dest_group), (h.topic or None, SUB))


def _consume_stats(cmd: RemotingCommand) -> Needs:
    h = GetConsumeStatsRequestHeader.from_command(cmd)
    return _needs(_group(h.consumer_group), (h.topic or None, ANY))


def _consumer_status(cmd: RemotingCommand) -> Needs:
    h = GetConsumerStatusRequestHeader.from_command(cmd)
    return _needs(_group(h.group), (h.topic, ANY))


# -- a group's members --------------------------------------------------------------------------
def _consumer_connections(cmd: RemotingCommand) -> Needs:
    return _needs(_group(GetConsumerConnectionListRequestHeader.from_command(cmd).consumer_group))


def _producer_connections(cmd: RemotingCommand) -> Needs:
    return _needs(_group(GetProducerConnectionListRequestHeader.from_command(cmd).producer_group, ANY))


def _running_info(cmd: RemotingCommand) -> Needs:
    return _needs(_group(GetConsumerRunningInfoRequestHeader.from_command(cmd).consumer_group))


def _consume_directly(cmd: RemotingCommand) -> Needs:
    return _needs(_group(ConsumeMessageDirectlyResultRequestHeader.from_command(cmd).consumer_group))


# -- a topic's queues and statistics ------------------------------------------------------------
def _max_offset(cmd: RemotingCommand) -> Needs:
    return _needs((GetMaxOffsetRequestHeader.from_command(cmd).topic, ANY))


def _min_offset(cmd: RemotingCommand) -> Needs:
    return _needs((GetMinOffsetRequestHeader.from_command(cmd).topic, ANY))


def _earliest_time(cmd: RemotingCommand) -> Needs:
    return _needs((GetEarliestMsgStoretimeRequestHeader.from_command(cmd).topic, ANY))


def _search_offset(cmd: RemotingCommand) -> Needs:
    return _needs((SearchOffsetRequestHeader.from_command(cmd).topic, ANY))


def _topic_stats(cmd: RemotingCommand) -> Needs:
    return _needs((GetTopicStatsInfoRequestHeader.from_command(cmd).topic, ANY))


def _consumed_by(cmd: RemotingCommand) -> Needs:
    return _needs((QueryTopicConsumeByWhoRequestHeader.from_command(cmd).topic, ANY))


def _stats_data(cmd: RemotingCommand) -> Needs:
    topic, _, group = ViewBrokerStatsDataRequestHeader.from_command(cmd).stats_key.partition("@")
    return _needs((topic, ANY), _group(group or None))


# -- transactions, queries ----------------------------------------------------------------------
def _end_transaction(cmd: RemotingCommand) -> Needs:
    return _needs(_group(EndTransactionRequestHeader.from_command(cmd).producer_group, ANY))


def _query_message(cmd: RemotingCommand) -> Needs:
    return _needs((QueryMessageRequestHeader.from_command(cmd).topic, SUB))


# -- admin: what ACL 2.0 asks about (ACL 1.0 asks only for an admin account) ----------------------
def _created_topic(cmd: RemotingCommand) -> Needs:
    return _needs((CreateTopicRequestHeader.from_command(cmd).topic, ANY))


def _deleted_topic(cmd: RemotingCommand) -> Needs:
    return _needs((DeleteTopicRequestHeader.from_command(cmd).topic, ANY))


def _created_group(cmd: RemotingCommand) -> Needs:
    return _needs(_group(SubscriptionGroupConfig.from_json(cmd.payload or b"{}").group_name or None))


def _deleted_group(cmd: RemotingCommand) -> Needs:
    return _needs(_group(DeleteSubscriptionGroupRequestHeader.from_command(cmd).group_name))


def _auth(header: type[Header] | None, actions: Action) -> Rule:
    """An ACL 2.0 administration code: admin accounts in ACL 1.0, the cluster in ACL 2.0 (whose
    handler also wants a super user)."""
    return Rule(header, admin=True, acts=Acts(cluster=(actions,)))


AUTH_RULES: dict[int, Rule] = {
    C.AUTH_CREATE_USER: _auth(UserRequestHeader, Action.UPDATE),
    C.AUTH_UPDATE_USER: _auth(UserRequestHeader, Action.UPDATE),
    C.AUTH_DELETE_USER: _auth(UserRequestHeader, Action.UPDATE),
    C.AUTH_GET_USER: _auth(UserRequestHeader, Action.GET),
    C.AUTH_LIST_USER: _auth(ListUsersRequestHeader, Action.GET),
    C.AUTH_CREATE_ACL: _auth(AclRequestHeader, Action.UPDATE),
    C.AUTH_UPDATE_ACL: _auth(AclRequestHeader, Action.UPDATE),
    C.AUTH_DELETE_ACL: _auth(DeleteAclRequestHeader, Action.UPDATE),
    C.AUTH_GET_ACL: _auth(AclRequestHeader, Action.GET),
    C.AUTH_LIST_ACL: _auth(ListAclsRequestHeader, Action.GET),
}
"""ACL 2.0's administration codes, served by the broker and the name server alike."""

_V2_SEND = frozenset({"n"})  # the broker name (4.9.5+): this broker is the one addressed

BROKER_RULES: dict[int, Rule] = {
    # -- send
    C.SEND_MESSAGE: Rule(SendMessageRequestHeader, _send),
    C.SEND_MESSAGE_V2: Rule(SendMessageRequestHeader, _send, tolerated=_V2_SEND),
    C.SEND_BATCH_MESSAGE: Rule(SendMessageRequestHeader, _send, tolerated=_V2_SEND),
    C.RECALL_MESSAGE: Rule(RecallMessageRequestHeader, _recall),
    # -- pull and consume
    C.PULL_MESSAGE: Rule(PullMessageRequestHeader, _pull),
    C.CONSUMER_SEND_MSG_BACK: Rule(
        ConsumerSendMsgBackRequestHeader, _send_back
    ),  # + its handler: the message's topic
    C.HEART_BEAT: Rule(None, _heartbeat),
    C.UNREGISTER_CLIENT: Rule(UnregisterClientRequestHeader, _unregister),
    C.GET_CONSUMER_LIST_BY_GROUP: Rule(GetConsumerListByGroupRequestHeader, _consumer_list,
                                       acts=Acts(sub=(Action.SUB, Action.GET))),
    C.CHECK_CLIENT_CONFIG: Rule(None, _check_client),
    C.LOCK_BATCH_MQ: Rule(None, _lock),
    C.UNLOCK_BATCH_MQ: Rule(None, _unlock),
    # -- a group's offsets
    C.QUERY_CONSUMER_OFFSET: Rule(QueryConsumerOffsetRequestHeader, _query_offset,
                                  acts=Acts(sub=(Action.SUB, Action.GET))),
    C.UPDATE_CONSUMER_OFFSET: Rule(UpdateConsumerOffsetRequestHeader, _update_offset,
                                   acts=Acts(sub=(Action.SUB, Action.UPDATE))),
    C.INVOKE_BROKER_TO_RESET_OFFSET: Rule(ResetOffsetRequestHeader, _reset_offset,
                                          acts=Acts(sub=(Action.UPDATE,))),
    C.CLONE_GROUP_OFFSET: Rule(CloneGroupOffsetRequestHeader, _clone_offsets,
                               acts=Acts(sub=(Action.UPDATE,))),
    C.GET_CONSUME_STATS: Rule(GetConsumeStatsRequestHeader, _consume_stats, acts=GET),
    C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: Rule(GetConsumerStatusRequestHeader, _consumer_status, acts=GET),
    # -- a group's members
    C.GET_CONSUMER_CONNECTION_LIST: Rule(GetConsumerConnectionListRequestHeader, _consumer_connections,
                                         acts=GET),
    C.GET_PRODUCER_CONNECTION_LIST: Rule(GetProducerConnectionListRequestHeader, _producer_connections,
                                         acts=CLUSTER_GET),
    C.GET_CONSUMER_RUNNING_INFO: Rule(GetConsumerRunningInfoRequestHeader, _running_info, acts=GET),
    C.CONSUME_MESSAGE_DIRECTLY: Rule(
        ConsumeMessageDirectlyResultRequestHeader, _consume_directly
    ),  # + its handler
    # -- a topic's queues and statistics
    C.GET_MAX_OFFSET: Rule(GetMaxOffsetRequestHeader, _max_offset, acts=GET),
    C.GET_MIN_OFFSET: Rule(GetMinOffsetRequestHeader, _min_offset, acts=GET),
    C.GET_EARLIEST_MSG_STORETIME: Rule(GetEarliestMsgStoretimeRequestHeader, _earliest_time, acts=GET),
    C.SEARCH_OFFSET_BY_TIMESTAMP: Rule(SearchOffsetRequestHeader, _search_offset, acts=GET),
    C.GET_TOPIC_STATS_INFO: Rule(GetTopicStatsInfoRequestHeader, _topic_stats, acts=GET),
    C.QUERY_TOPIC_CONSUME_BY_WHO: Rule(QueryTopicConsumeByWhoRequestHeader, _consumed_by, acts=GET),
    C.VIEW_BROKER_STATS_DATA: Rule(ViewBrokerStatsDataRequestHeader, _stats_data, acts=CLUSTER_GET),
    # -- transactions
    C.END_TRANSACTION: Rule(
        EndTransactionRequestHeader, _end_transaction
    ),  # + its handler: PUB on the real topic
    # -- message bodies by key
    C.QUERY_MESSAGE: Rule(QueryMessageRequestHeader, _query_message, tolerated=frozenset({UNIQUE_KEY_QUERY}),
                          acts=Acts(sub=(Action.SUB, Action.GET))),
    # -- admin
    C.UPDATE_AND_CREATE_TOPIC: Rule(CreateTopicRequestHeader, admin=True,
                                    acts=Acts(names=_created_topic, any_topic=(Action.CREATE,))),
    C.DELETE_TOPIC_IN_BROKER: Rule(DeleteTopicRequestHeader, admin=True,
                                   acts=Acts(names=_deleted_topic, any_topic=(Action.DELETE,))),
    C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: Rule(None, admin=True,
                                                acts=Acts(names=_created_group, sub=(Action.CREATE,))),
    C.DELETE_SUBSCRIPTIONGROUP: Rule(
        DeleteSubscriptionGroupRequestHeader, admin=True, tolerated=frozenset({"removeOffset"}),
        acts=Acts(names=_deleted_group, sub=(Action.DELETE,)),
    ),  # Java 4.9.8's; offsets stay here
    C.UPDATE_BROKER_CONFIG: Rule(None, admin=True, acts=CLUSTER_UPDATE),
    C.GET_ALL_CONSUMER_OFFSET: Rule(None, admin=True, acts=CLUSTER_GET),  # all offsets (a slave's sync)
    # -- names no topic or group: any authenticated account
    C.VIEW_MESSAGE_BY_ID: Rule(
        ViewMessageRequestHeader, acts=Acts(sub=(Action.GET,))
    ),  # a commitlog offset: its handler asks SUB on the topic found (Get in ACL 2.0)
    C.GET_ALL_TOPIC_CONFIG: Rule(None),  # topic configs (a slave's sync, tools)
    C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: Rule(None),  # group configs (a slave's sync, tools)
    C.GET_ALL_DELAY_OFFSET: Rule(None),  # delivery progress of the delay levels (a slave's sync)
    C.GET_TIMER_CHECK_POINT: Rule(None),  # the timer's progress (a slave's sync)
    C.GET_BROKER_CONFIG: Rule(None),  # the broker's settings, secrets left out
    C.GET_BROKER_RUNTIME_INFO: Rule(None),  # broker-wide counters
    **AUTH_RULES,
    # -- per-user quotas (JSON bodies; their handler also wants a super user)
    C.UPDATE_USER_QUOTA: _auth(None, Action.UPDATE),
    C.DELETE_USER_QUOTA: _auth(None, Action.UPDATE),
    C.GET_USER_QUOTA: _auth(None, Action.GET),
    C.LIST_USER_QUOTA: _auth(None, Action.GET),
}
"""Every request code the broker serves → its rule."""

ADMIN_CODES = frozenset(code for code, rule in BROKER_RULES.items() if rule.admin)
"""The broker's admin requests: Apache ``PlainAccessValidator``'s, and GET_ALL_CONSUMER_OFFSET."""
OPEN_CODES = frozenset(code for code, rule in BROKER_RULES.items() if rule.needs is None and not rule.admin)
"""The broker's requests that name no topic or group."""


def rule_needs(rules: Mapping[int, Rule], cmd: RemotingCommand) -> Needs:
    """Resource → permission ``cmd`` needs by ``rules`` (a code not in them needs nothing: it is not
    served); :class:`RequestRefused` when it carries a field its code does not take or does not
    decode as its handler reads it."""
    rule = rules.get(cmd.code)
    if rule is None:
        return {}
    stray = rule.stray_field(cmd)
    if stray is not None:
        raise RequestRefused(f"request code {cmd.code} takes no field {stray[:64]!r}")
    return {} if rule.needs is None else _decoded(rule.needs, cmd)


def _decoded(decode: Callable[[RemotingCommand], _T], cmd: RemotingCommand) -> _T:
    try:
        return decode(cmd)
    except RequestRefused:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise RequestRefused(f"cannot read request code {cmd.code} to check its permissions: {e}") from None


def acl2_asks(rules: Mapping[int, Rule], cmd: RemotingCommand, cluster: str) -> Asks:
    """What ``cmd`` asks of ACL 2.0 by ``rules`` (see the module docstring) on a server of ``cluster``
    (empty: a name server, which serves every cluster); :class:`RequestRefused` as :func:`rule_needs`."""
    rule = rules.get(cmd.code)
    needed = rule_needs(rules, cmd)
    if rule is None:
        return []
    if rule.acts.cluster:
        named = _decoded(rule.acts.cluster_of, cmd) if rule.acts.cluster_of is not None else cluster
        return [(Resource.cluster(named) if named else ALL_CLUSTERS, rule.acts.cluster)]
    if rule.acts.names is not None:
        needed = _decoded(rule.acts.names, cmd)
    return translate(rule.acts, needed)

def needs(cmd: RemotingCommand) -> Needs:
    """What a broker request needs (:data:`BROKER_RULES`)."""
    return rule_needs(BROKER_RULES, cmd)



def stored_needs(topic: str, properties: dict[str, str]) -> Needs:
    """What reading a stored message by its offset needs: SUB on the topic it belongs to, which for
    a message waiting in an internal topic (delayed, timer, half) is the one it is bound for."""
    if topic in INTERNAL_TOPICS:
        topic = properties.get(Prop.REAL_TOPIC) or topic
    return {topic: SUB}
