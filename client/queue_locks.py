"""Broker-side queue locks of orderly consumption (LOCK_BATCH_MQ 41, UNLOCK_BATCH_MQ 42): one
request per broker for a set of queues."""

from __future__ import annotations

import logging

from pyrocketmq.remoting.body import (
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    UnlockBatchRequestBody,
)
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand

from .errors import MQError
from .instance import ClientInstance
from .request_errors import check_response

log = logging.getLogger("pyrocketmq.client")


def by_broker(mqs: list[MessageQueue]) -> dict[str, list[MessageQueue]]:
    """``mqs`` grouped by broker name, in their order."""
    out: dict[str, list[MessageQueue]] = {}
    for mq in mqs:
        out.setdefault(mq.broker_name, []).append(mq)
    return out


async def lock_batch(
    inst: ClientInstance, group: str, broker_name: str, mqs: list[MessageQueue]
) -> set[MessageQueue]:
    """Lock ``mqs`` (all on ``broker_name``) for this client; the queues it holds now."""
    addr = await inst.master_addr_of(mqs[0].topic, broker_name)
    body = LockBatchRequestBody(consumer_group=group, client_id=inst.client_id, mq_set=mqs).to_json()
    resp = check_response(
        await inst.invoke(addr, RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=body)), addr
    )
    return set(LockBatchResponseBody.from_json(resp.payload or b"{}").lock_ok_mq_set)


async def unlock_batches(inst: ClientInstance, group: str, mqs: list[MessageQueue]) -> None:
    """Release ``mqs``, one request per broker; a failure is logged (the lock expires by itself)."""
    for broker, queues in by_broker(mqs).items():
        body = UnlockBatchRequestBody(consumer_group=group, client_id=inst.client_id, mq_set=queues).to_json()
        try:
            addr = await inst.master_addr_of(queues[0].topic, broker)
            check_response(
                await inst.invoke(addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=body)), addr
            )
        except MQError as e:
            log.warning("group %s: unlocking %s failed: %s", group, queues, e)
