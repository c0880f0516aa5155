"""RecallMessage on the 5.x endpoint: Apache 5.3.2's proxy in front of the broker's RECALL_MESSAGE
(:mod:`pyrocketmq.broker.processors.recall`, which does the recall). Pure, no I/O.

What the proxy checks itself, before it asks the broker (Apache ``RecallMessageActivity`` and
``ProducerProcessor.recallMessage``), and the status each answer becomes:

==================================================  ====================================================
an illegal topic name, or a system topic            ILLEGAL_TOPIC
a typed topic that takes no DELAY messages          MESSAGE_PROPERTY_CONFLICT_WITH_TYPE (Apache's words)
a handle that does not read                         INTERNAL_SERVER_ERROR "recall handle is invalid"
the broker: SUCCESS                                 OK, with the message id
the broker: TOPIC_NOT_EXIST                         TOPIC_NOT_FOUND
the broker: any other refusal                       INTERNAL_SERVER_ERROR with the broker's remark
==================================================  ====================================================

Apache's proxy checks the topic's type with ``enableTopicMessageTypeCheck`` (on by default), which
refuses a topic without a type; an untyped topic takes every type here, as for SendMessage
(:func:`~.convert.accepted_types`). Its local mode answers a missing topic INTERNAL_SERVER_ERROR
(a failed type check, in fact); TOPIC_NOT_FOUND is what its cluster mode answers.

The request carries the broker the handle names (``bname``): the service sends a recall for another
broker to that broker (:meth:`~.service.MessagingService.recall_message`), as Apache's proxy in
cluster mode does, since a 5.x client sends every recall to its own endpoint.
"""

from __future__ import annotations

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.names import check_topic_name, is_system_topic
from pyrocketmq.remoting.recall_handle import RecallHandleError, decode_recall_handle

from .convert import accepted_types, status
from .pb import definition_pb2 as pb


def recall_request(topic: str, handle: str, topic_type: str | None) -> RemotingCommand | pb.Status:
    """The RECALL_MESSAGE that recalls by ``handle`` (a topic typed ``topic_type``, None when untyped
    or unknown), or the status the proxy answers itself."""
    problem = check_topic_name(topic)
    if problem is not None:
        return status(pb.ILLEGAL_TOPIC, problem)
    if is_system_topic(topic):
        return status(pb.ILLEGAL_TOPIC, "cannot access system topic")
    if pb.DELAY not in accepted_types(topic_type):
        return status(
            pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
            "TopicMessageType validate failed, the expected type is "
            f"{(topic_type or '').upper()}, but actual type is DELAY",
        )
    try:
        broker_name = decode_recall_handle(handle).broker_name
    except RecallHandleError as e:
        return status(pb.INTERNAL_SERVER_ERROR, str(e))
    fields = {"topic": topic, "recallHandle": handle, "bname": broker_name}
    return RemotingCommand.request(RequestCode.RECALL_MESSAGE, fields)


def recall_answer(resp: RemotingCommand | None) -> tuple[pb.Status, str]:
    """The status and message id of the broker's answer to RECALL_MESSAGE (None: no answer)."""
    if resp is None:
        return status(pb.INTERNAL_SERVER_ERROR, "recall failed, execute error"), ""
    if resp.code == ResponseCode.SUCCESS:
        return status(pb.OK), str(resp.ext_fields.get("msgId") or "")
    code = pb.TOPIC_NOT_FOUND if resp.code == ResponseCode.TOPIC_NOT_EXIST else pb.INTERNAL_SERVER_ERROR
    return status(code, resp.remark or str(resp.code)), ""
