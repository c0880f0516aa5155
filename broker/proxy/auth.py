"""Access control on the 5.x endpoint: the ``authorization`` header RocketMQ 5 clients send, checked
against the broker's own ACL accounts (``plain_acl.yml``), with the same permissions as 4.x requests
(sending needs PUB on the topic; receiving and settling need SUB on the topic and on the group). What
a client announces on its Telemetry stream is checked the same way, as what it would be used for: a
producer's Settings need PUB on each topic it publishes (its session then answers those topics'
transaction check-backs), a consumer's need SUB on its group and on each topic it subscribes to.

The header is ``MQv2-HMAC-SHA1 Credential=<accessKey>[/...], SignedHeaders=x-mq-date-time,
Signature=<hex HMAC-SHA1(secretKey, x-mq-date-time)>``; the hex digits may be of either case
(the Java client writes lower case, the Node client upper case). The date is not checked against the
clock (clients' clocks drift; the signature still proves the secret).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from typing import Any

from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX
from pyrocketmq.server.acl import ANY, PUB, SUB, Account, AclValidator, permission_refusal

from .pb import definition_pb2 as pb, service_pb2 as spb

ALGORITHM = "MQv2-HMAC-SHA1"

Access = Callable[[Any, Any], "pb.Status | None"]
"""``(request, context) → Status | None``: why the call is refused (access control), or None."""


def parse_authorization(header: str) -> tuple[str, str] | None:
    """``(access key, signature)`` of an authorization header, or None when it is not one."""
    algorithm, _, rest = header.strip().partition(" ")
    if algorithm != ALGORITHM:
        return None
    fields: dict[str, str] = {}
    for part in rest.split(","):
        key, sep, value = part.strip().partition("=")
        if sep:
            fields[key.strip()] = value.strip()
    credential, sig = fields.get("Credential", ""), fields.get("Signature", "")
    if not credential or not sig:
        return None
    return credential.split("/", 1)[0], sig


def expected_signature(secret_key: str, date_time: str) -> str:
    return hmac.new(secret_key.encode(), date_time.encode(), hashlib.sha1).hexdigest()


def _group(name: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + name


def _settings_needs(settings: pb.Settings) -> dict[str, int]:
    """The permissions announcing ``settings`` needs (Apache ``PlainAccessValidator.parse``)."""
    if settings.HasField("subscription"):
        subscription = settings.subscription
        out = {e.topic.name: SUB for e in subscription.subscriptions}
        out[_group(subscription.group.name)] = SUB
        return out
    return {t.name: PUB for t in settings.publishing.topics}


def needs(request: Any) -> dict[str, int]:
    """The permissions a 5.x request needs: resource (topic, or ``%RETRY%<group>``) → PUB, SUB or ANY."""
    if isinstance(request, spb.TelemetryCommand):
        return _settings_needs(request.settings) if request.HasField("settings") else {}
    if isinstance(request, spb.SendMessageRequest):
        return {m.topic.name: PUB for m in request.messages}
    if isinstance(request, spb.EndTransactionRequest):
        return {request.topic.name: PUB}
    if isinstance(request, spb.QueryRouteRequest):  # a route: any right on its topic, as at the name server
        return {request.topic.name: ANY}
    if isinstance(request, spb.ReceiveMessageRequest):
        return {request.message_queue.topic.name: SUB, _group(request.group.name): SUB}
    if isinstance(request, (spb.AckMessageRequest, spb.ChangeInvisibleDurationRequest,
                            spb.ForwardMessageToDeadLetterQueueRequest, spb.QueryAssignmentRequest)):
        return {request.topic.name: SUB, _group(request.group.name): SUB}
    return {}


class GrpcAccess:
    """Checks one call: its metadata (who) and its request (what); None or the refusing Status."""

    def __init__(self, validator: AclValidator) -> None:
        self.validator = validator

    def refusal(self, metadata: Iterable[tuple[str, Any]], remote_ip: str, request: Any) -> pb.Status | None:
        headers = {str(k).lower(): str(v) for k, v in metadata}
        parsed = parse_authorization(headers.get("authorization", ""))
        access_key, sig = parsed if parsed is not None else ("", "")
        date_time = headers.get("x-mq-date-time", "")

        def signed(account: Account) -> bool:
            want = expected_signature(account.secret_key, date_time)
            return bool(sig) and hmac.compare_digest(want, sig.lower())

        account, why = self.validator.authenticate(access_key, remote_ip, signed)
        if why is not None:
            return pb.Status(code=pb.UNAUTHORIZED, message=f"AclException: {why}")
        if account is None:  # a white-listed address
            return None
        problem = permission_refusal(account, needs(request))
        return None if problem is None else pb.Status(code=pb.FORBIDDEN, message=f"AclException: {problem}")
