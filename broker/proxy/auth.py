"""Access control on the 5.x endpoint: the ``authorization`` header RocketMQ 5 clients send, checked
against the broker's ACL 1.0 accounts (``plain_acl.yml``) and its ACL 2.0 users and ACLs, each as
the 4.x port checks it; with both on, a call must pass both (ACL 1.0 first).

The header is ``MQv2-HMAC-SHA1 Credential=<accessKey>[/...], SignedHeaders=x-mq-date-time,
Signature=<hex HMAC-SHA1(secretKey, x-mq-date-time)>``; the hex digits may be of either case
(the Java client writes lower case, the Node client upper case). The date is not checked against the
clock (clients' clocks drift; the signature still proves the secret). Under ACL 2.0 the access key is
the username and the secret its password.

What each RPC needs is one table, :data:`RPC_RULES` (request class → :class:`RpcRule`), read by
both models, as :mod:`pyrocketmq.server.acl_table` is for the 4.x requests:

=================================  ==========================  =====================================
RPC                                ACL 1.0 (topic, group)      ACL 2.0 (Apache 5.3's gRPC builder)
=================================  ==========================  =====================================
SendMessage, EndTransaction,       PUB on the topic            Pub on the topic
RecallMessage
QueryRoute                         any right on the topic      Pub or Sub on the topic
ReceiveMessage, AckMessage,        SUB on the topic and group  Sub on the group and the topic
ForwardMessageToDeadLetterQueue,
QueryAssignment
ChangeInvisibleDuration            SUB on the topic and group  Sub on the group
Heartbeat                          --                          a consumer's: Sub on its group
NotifyClientTermination            --                          Sub on the group it names, if any
Telemetry Settings                 a producer's topics PUB; a consumer's group and topics SUB (both)
=================================  ==========================  =====================================

Announcing Settings is checked as what it would be used for: a producer's session answers its
topics' transaction check-backs, a consumer's is handed its group's messages. A Telemetry stream is
authenticated when it opens; each Settings it carries is judged when it arrives (the service asks).
ACL 2.0 asks the group before the topic and names a blank one as Apache does (``topic is null.``).
A SendMessage is judged on each message's topic (Apache looks at the first only).

Refusals: ACL 1.0 answers UNAUTHORIZED (who) or FORBIDDEN (what) with ``AclException: <why>``;
ACL 2.0 answers as Apache 5.3's proxy does, UNAUTHORIZED for both, with Apache's words
(``check signature failed.``, ``User:alice has no permission to access Topic:t from 10.0.0.5, the
decision is deny.``).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX
from pyrocketmq.server.acl import ANY, PUB, SUB, Account, AclValidator, permission_refusal
from pyrocketmq.server.acl2 import PUB_SUB, Asks, translate
from pyrocketmq.server.acl_perm import Needs, is_group_resource
from pyrocketmq.server.acl_service import UserAccess
from pyrocketmq.server.acl_table import RequestRefused

from .pb import definition_pb2 as pb, service_pb2 as spb
from .quota_meter import CALLER

ALGORITHM = "MQv2-HMAC-SHA1"
USER_REFUSED = pb.UNAUTHORIZED
"""What ACL 2.0 refusals answer, of authentication and authorization alike: Apache 5.3's proxy maps
both its ``AuthenticationException`` and its ``AuthorizationException`` to UNAUTHORIZED."""
CONSUMER_TYPES = frozenset({pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER, pb.PULL_CONSUMER})
"""The client types whose Heartbeat ACL 2.0 asks Sub on the group of (Apache 5.3's)."""

Access = Callable[[Any, Any], "pb.Status | None"]
"""``(request, context) → Status | None``: why the call is refused (access control), or None."""


class HeaderError(ValueError):
    """The ``authorization`` header cannot be read; the message is Apache 5.3's."""


def read_authorization(header: str) -> tuple[str, str, str]:
    """``(algorithm, access key, signature)`` of an authorization header, read as Apache 5.3 reads it
    (``DefaultAuthenticationContextBuilder``): a missing Credential or Signature reads as ""."""
    algorithm, sep, rest = header.strip().partition(" ")
    if not sep:
        raise HeaderError("authentication header is incorrect.")
    access_key = signature = ""
    for part in rest.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            raise HeaderError("authentication keyValues length is incorrect, actual length=1.")
        if key == "Credential":
            access_key = value.split("/", 1)[0]
        elif key == "Signature":
            signature = value
    return algorithm, access_key, signature


def parse_authorization(header: str) -> tuple[str, str] | None:
    """``(access key, signature)`` of an ACL 1.0 authorization header, or None when it is not one."""
    try:
        algorithm, access_key, sig = read_authorization(header)
    except HeaderError:
        return None
    if algorithm != ALGORITHM or not access_key.strip() or not sig.strip():
        return None
    return access_key.strip(), sig.strip()


def expected_signature(secret_key: str, date_time: str) -> str:
    return hmac.new(secret_key.encode(), date_time.encode(), hashlib.sha1).hexdigest()


def signed_with(secret_key: str, date_time: str, signature: str) -> bool:
    """Whether ``signature`` (hex, either case) is ``secret_key``'s over ``date_time``."""
    want = expected_signature(secret_key, date_time)
    return bool(signature) and hmac.compare_digest(want, signature.strip().lower())


# -- what each RPC needs ----------------------------------------------------------------------------
def _group(name: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + name


def _settings_needs(settings: pb.Settings) -> Needs:
    """The permissions announcing ``settings`` needs (Apache ``PlainAccessValidator.parse``)."""
    if settings.HasField("subscription"):
        subscription = settings.subscription
        out = {e.topic.name: SUB for e in subscription.subscriptions}
        out[_group(subscription.group.name)] = SUB
        return out
    return {t.name: PUB for t in settings.publishing.topics}


def _telemetry(request: spb.TelemetryCommand) -> Needs:
    return _settings_needs(request.settings) if request.HasField("settings") else {}


def _send(request: spb.SendMessageRequest) -> Needs:
    return {m.topic.name: PUB for m in request.messages}


def _send_asks(request: spb.SendMessageRequest) -> Needs:
    if not request.messages:
        raise RequestRefused("message is null.")
    return _send(request)


def _end(request: spb.EndTransactionRequest) -> Needs:
    return {request.topic.name: PUB}


def _recall(request: spb.RecallMessageRequest) -> Needs:  # Apache 5.3.2: PUB / Pub on the topic
    return {request.topic.name: PUB}


def _route(request: spb.QueryRouteRequest) -> Needs:  # a route: any right on its topic, as at the name server
    return {request.topic.name: ANY}


def _receive(request: spb.ReceiveMessageRequest) -> Needs:
    return {request.message_queue.topic.name: SUB, _group(request.group.name): SUB}


def _receive_asks(request: spb.ReceiveMessageRequest) -> Needs:
    if not request.HasField("message_queue"):
        raise RequestRefused("messageQueue is null.")
    return _receive(request)


def _consume(request: Any) -> Needs:
    """Settling or assigning a group's messages of a topic (AckMessage, ChangeInvisibleDuration,
    ForwardMessageToDeadLetterQueue, QueryAssignment)."""
    return {request.topic.name: SUB, _group(request.group.name): SUB}


def _group_only(request: Any) -> Needs:
    return {_group(request.group.name): SUB}


def _nothing(request: Any) -> Needs:
    return {}


def _heartbeat_asks(request: spb.HeartbeatRequest) -> Needs:
    return _group_only(request) if request.client_type in CONSUMER_TYPES else {}


def _termination_asks(request: spb.NotifyClientTerminationRequest) -> Needs:
    return _group_only(request) if request.group.name.strip() else {}


@dataclass(frozen=True, slots=True)
class RpcRule:
    """What one RPC's request needs."""

    needs: Callable[[Any], Needs]
    """ACL 1.0: resource (topic, or ``%RETRY%<group>``) → PUB, SUB or ANY."""
    asks: Callable[[Any], Needs] | None = None
    """ACL 2.0, where Apache 5.3 asks otherwise, in the same form (a topic's PUB is Pub, SUB Sub, ANY
    Pub or Sub; a group's SUB is Sub); :class:`RequestRefused` for a request it refuses outright.
    None: as ``needs``."""


RPC_RULES: dict[type, RpcRule] = {
    spb.TelemetryCommand: RpcRule(_telemetry),
    spb.SendMessageRequest: RpcRule(_send, _send_asks),
    spb.EndTransactionRequest: RpcRule(_end),
    spb.RecallMessageRequest: RpcRule(_recall),
    spb.QueryRouteRequest: RpcRule(_route),
    spb.ReceiveMessageRequest: RpcRule(_receive, _receive_asks),
    spb.AckMessageRequest: RpcRule(_consume),
    spb.ChangeInvisibleDurationRequest: RpcRule(_consume, _group_only),
    spb.ForwardMessageToDeadLetterQueueRequest: RpcRule(_consume),
    spb.QueryAssignmentRequest: RpcRule(_consume),
    spb.HeartbeatRequest: RpcRule(_nothing, _heartbeat_asks),
    spb.NotifyClientTerminationRequest: RpcRule(_nothing, _termination_asks),
}
"""Every RPC that names a topic or a group → its rule (the others need an authenticated caller)."""


def needs(request: Any) -> Needs:
    """The permissions a 5.x request needs under ACL 1.0 (:data:`RPC_RULES`)."""
    rule = RPC_RULES.get(type(request))
    return {} if rule is None else rule.needs(request)


def user_asks(request: Any) -> Asks:
    """What a 5.x request asks of ACL 2.0 (:data:`RPC_RULES`): resources, groups first, each with the
    actions of which one is needed; :class:`RequestRefused` when it names a blank topic or group."""
    rule = RPC_RULES.get(type(request))
    if rule is None:
        return []
    needed = (rule.asks or rule.needs)(request)
    for resource in needed:
        if resource in ("", RETRY_GROUP_TOPIC_PREFIX):
            raise RequestRefused("group is null." if resource else "topic is null.")
    groups_first = dict(sorted(needed.items(), key=lambda item: not is_group_resource(item[0])))
    return translate(PUB_SUB, groups_first)


# -- the check ------------------------------------------------------------------------------------
class GrpcAccess:
    """Checks one call: its metadata (who) and its request (what, None for a stream being opened);
    None or the refusing Status. ``validator``: ACL 1.0; ``users``: ACL 2.0."""

    def __init__(self, validator: AclValidator | None = None, users: UserAccess | None = None) -> None:
        self.validator = validator
        self.users = users

    def refusal(self, metadata: Iterable[tuple[str, Any]], remote_ip: str, request: Any,
                peer_cert: bytes | None = None) -> pb.Status | None:
        """``peer_cert``: the PEM client certificate the TLS handshake verified, if any."""
        headers = {str(k).lower(): str(v) for k, v in metadata}
        refused = None
        if self.validator is not None:
            refused = self._account_refusal(self.validator, headers, remote_ip, request)
        if refused is None and self.users is not None:
            refused = self._user_refusal(self.users, headers, remote_ip, request, peer_cert)
        return refused

    @staticmethod
    def _account_refusal(validator: AclValidator, headers: dict[str, str], remote_ip: str,
                         request: Any) -> pb.Status | None:
        parsed = parse_authorization(headers.get("authorization", ""))
        access_key, sig = parsed if parsed is not None else ("", "")
        date_time = headers.get("x-mq-date-time", "")

        def signed(account: Account) -> bool:
            return signed_with(account.secret_key, date_time, sig)

        account, why = validator.authenticate(access_key, remote_ip, signed)
        if why is not None:
            return pb.Status(code=pb.UNAUTHORIZED, message=f"AclException: {why}")
        if account is None:  # a white-listed address
            return None
        problem = permission_refusal(account, needs(request))
        return None if problem is None else pb.Status(code=pb.FORBIDDEN, message=f"AclException: {problem}")

    @staticmethod
    def _user_refusal(users: UserAccess, headers: dict[str, str], remote_ip: str, request: Any,
                      peer_cert: bytes | None) -> pb.Status | None:
        header, date_time = headers.get("authorization", ""), headers.get("x-mq-date-time", "")
        by_certificate = not header and bool(users.cert_users)  # unsigned: the client certificate's user
        username = users.cert_users.username_pem(peer_cert) if by_certificate else None
        sig = ""
        try:
            if header and not date_time:
                raise HeaderError("datetime is null.")
            if header:
                _, username, sig = read_authorization(header)
        except HeaderError as e:
            if users.authentication:
                return pb.Status(code=USER_REFUSED, message=str(e))
        why = users.authenticate(
            username or None, lambda user: by_certificate or signed_with(user.password, date_time, sig)
        )
        if why is None and users.authorization and request is not None:
            try:
                why = users.judge(username or None, user_asks(request), remote_ip)
            except RequestRefused as e:
                why = str(e)
        if why is None:
            CALLER.set(username or None)  # whose quota the call counts against
            return None
        return pb.Status(code=USER_REFUSED, message=why)
