"""A message parked under a system topic (a delay level, the timer store, a transaction's half
topic) with its real topic and queue in ``REAL_TOPIC``/``REAL_QID``: where it really goes, and the
message stored again there. Pure functions, no I/O."""

from __future__ import annotations

from pyrocketmq.remoting.message import MessageExt, Prop, encode_properties, pack_host, tags_code

from .store.values import MessageInner


def restored_topic(msg: MessageExt) -> tuple[str, int] | None:
    """The ``(REAL_TOPIC, REAL_QID)`` a parked message names, or None when it names none."""
    topic = msg.properties.get(Prop.REAL_TOPIC)
    try:
        qid = int(msg.properties.get(Prop.REAL_QID, ""))
    except ValueError:
        return None
    return (topic, qid) if topic and qid >= 0 else None


def restored(
    msg: MessageExt,
    *,
    topic: str,
    queue_id: int,
    properties: dict[str, str],
    reconsume_times: int | None = None,
    prepared_transaction_offset: int | None = None,
    sys_flag: int | None = None,
) -> MessageInner:
    """``msg`` stored again under ``topic``/``queue_id`` with ``properties``: body, flag, born time
    and born/store hosts are the original's, and so are its sys flag, reconsume times and prepared
    transaction offset unless given."""
    if reconsume_times is None:
        reconsume_times = msg.reconsume_times
    if prepared_transaction_offset is None:
        prepared_transaction_offset = msg.prepared_transaction_offset
    return MessageInner(
        topic=topic,
        body=msg.body,
        flag=msg.flag,
        properties=properties,
        properties_bytes=encode_properties(properties),
        queue_id=queue_id,
        sys_flag=msg.sys_flag if sys_flag is None else sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=pack_host(*msg.born_host),
        store_host=pack_host(*msg.store_host),
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared_transaction_offset,
        tags_code=tags_code(properties.get(Prop.TAGS)),
        keys=properties.get(Prop.KEYS),
    )


def restored_in_real_topic(
    msg: MessageExt,
    properties: dict[str, str],
    *,
    prepared_transaction_offset: int | None = None,
    sys_flag: int | None = None,
) -> MessageInner | None:
    """:func:`restored` under the ``REAL_TOPIC``/``REAL_QID`` ``msg`` names; None when it names none."""
    where = restored_topic(msg)
    if where is None:
        return None
    return restored(
        msg,
        topic=where[0],
        queue_id=where[1],
        properties=properties,
        prepared_transaction_offset=prepared_transaction_offset,
        sys_flag=sys_flag,
    )
