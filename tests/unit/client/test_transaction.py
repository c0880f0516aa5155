"""TransactionProducer's pure pieces: the half message's payload, END_TRANSACTION headers, misuse."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.client import Message, MQClientError, TransactionProducer, TransactionState
from pyrocketmq.client.message import SendResult, SendStatus
from pyrocketmq.client.send_payload import Payload
from pyrocketmq.client.transaction import _state, as_half_message, end_header, end_header_from_check
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.message import MessageExt, create_offset_msg_id, decode_properties, pack_host


def test_half_message_payload():
    p = as_half_message(Payload("T", b"x", 0x301, "WAIT\x01true\x02UNIQ_KEY\x01U", 0, False, "U"), "pg")
    assert p.sys_flag == 0x301 | 0x4
    props = decode_properties(p.properties.encode())
    assert props == {"WAIT": "true", "UNIQ_KEY": "U", "TRAN_MSG": "true", "PGROUP": "pg"}


def test_end_header_names_the_half_message():
    offset_id = create_offset_msg_id(pack_host("10.0.0.2", 10911), 123_456)
    r = SendResult(
        SendStatus.SEND_OK, "UNIQ", offset_id, MessageQueue("T", "broker-a", 3), 17, transaction_id="TID"
    )
    h = end_header(r, "pg", TransactionState.COMMIT)
    assert h.to_ext() == {
        "producerGroup": "pg",
        "tranStateTableOffset": "17",
        "commitLogOffset": "123456",
        "commitOrRollback": "8",
        "msgId": "UNIQ",
        "fromTransactionCheck": "false",
        "transactionId": "TID",
    }


def test_end_header_from_a_check():
    fields = {
        "tranStateTableOffset": "9",
        "commitLogOffset": "777",
        "msgId": "M",
        "transactionId": "T",
        "offsetMsgId": "O",
    }
    msg = MessageExt(topic="Real", properties={"UNIQ_KEY": "U"})
    h = end_header_from_check("pg", fields, msg, TransactionState.ROLLBACK)
    assert (h.tran_state_table_offset, h.commit_log_offset, h.commit_or_rollback) == (9, 777, 12)
    assert (h.msg_id, h.transaction_id, h.from_transaction_check) == ("U", "T", True)
    assert end_header_from_check("pg", fields, MessageExt(), TransactionState.UNKNOWN).msg_id == "M"


@pytest.mark.parametrize(
    ("value", "state"),
    [
        (None, TransactionState.UNKNOWN),
        (8, TransactionState.COMMIT),
        (TransactionState.ROLLBACK, TransactionState.ROLLBACK),
        ("nonsense", TransactionState.UNKNOWN),
        (5, TransactionState.UNKNOWN),
    ],
)
def test_local_results(value, state):
    assert _state(value) is state


def test_batches_and_delays_cannot_be_transactional():
    p = TransactionProducer("pg", "127.0.0.1:1")

    def run(msg, fn=lambda m, a: TransactionState.COMMIT):
        return asyncio.run(p.send_in_transaction(msg, fn))

    with pytest.raises(MQClientError, match="batch"):
        run([Message("T", b"a"), Message("T", b"b")])
    with pytest.raises(MQClientError, match="delayed"):
        run(Message("T", b"a", delay_level=3))
    with pytest.raises(MQClientError, match="local transaction"):
        asyncio.run(p.send_in_transaction(Message("T", b"a")))


def test_a_half_message_handle_survives_pickling_and_names_the_same_transaction():
    import pickle

    from pyrocketmq.client import HalfMessage

    offset_id = create_offset_msg_id(pack_host("10.0.0.2", 10911), 99)
    mq = MessageQueue("T", "broker-a", 1)
    r = SendResult(SendStatus.SEND_OK, "UNIQ", offset_id, mq, 4, transaction_id="X")
    half = pickle.loads(pickle.dumps(HalfMessage.of(r)))
    assert half == HalfMessage("T", "broker-a", "UNIQ", 99, 4, "X")
    assert half.end_header("pg", TransactionState.ROLLBACK) == end_header(r, "pg", TransactionState.ROLLBACK)


def test_open_halves_are_ended_commit_or_rollback_only():
    from pyrocketmq.client import HalfMessage

    p = TransactionProducer("pg", "127.0.0.1:1")
    with pytest.raises(MQClientError, match="UNKNOWN"):
        asyncio.run(p.end_half(HalfMessage("T", "b", "U", 1, 1), TransactionState.UNKNOWN))
    with pytest.raises(MQClientError, match="batch"):
        asyncio.run(p.send_half([Message("T", b"a")]))  # type: ignore[arg-type]  # misuse on purpose
