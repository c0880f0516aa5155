"""The access-control account and the signed call metadata the gRPC proxy's tests share."""

from __future__ import annotations

ALICE = {
    "accessKey": "alice01",
    "secretKey": "alice-secret",
    "defaultTopicPerm": "DENY",
    "defaultGroupPerm": "SUB",
    "topicPerms": ["T=PUB|SUB"],
    "groupPerms": ["gdeny=DENY"],
}
"""May publish and subscribe to ``T`` only, and join every group but ``gdeny``."""
DATE = "20261126T101010Z"


def signed_metadata(access_key: str, signature: str) -> list[tuple[str, str]]:
    """What a 5.x client sends to say who calls: the date it signed and its MQv2-HMAC-SHA1 header."""
    authorization = (
        f"MQv2-HMAC-SHA1 Credential={access_key}, SignedHeaders=x-mq-date-time, Signature={signature}"
    )
    return [("x-mq-date-time", DATE), ("authorization", authorization)]
