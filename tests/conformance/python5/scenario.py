"""The official RocketMQ 5.x Python client (rocketmq-python-client) against a gRPC endpoint.

Runs under the client's own virtualenv (tests/conformance/pyclient5.py), not the project's.

    scenario.py ENDPOINT TOPIC produce MODE COUNT [ARG]
        MODE normal | async | fifo (ARG groups) | delay (ARG ms) | tx-commit | tx-rollback
             | tx-orphan (the process exits with its transactions open)
             | tx-checker (answers check-backs with COMMIT until COUNT were asked or ARG seconds passed)
    scenario.py ENDPOINT TOPIC simple GROUP COUNT SECONDS [INVISIBLE_S] [ack|noack|change]
    scenario.py ENDPOINT TOPIC push GROUP COUNT SECONDS [FAIL_ATTEMPTS]
    scenario.py polyglot ENDPOINT PLAIN_TOPIC FIFO_TOPIC CONSUMER_GROUP COUNT GROUPS PER_GROUP SECONDS
        the scenario every language's client runs (tests/conformance/polyglot5.py prints its own format)

Prints one JSON document as the last stdout line: {"sent": [...], "deliveries": [...], "errors": [...]}.
"""

import json
import os
import sys
import threading
import time

from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
    SimpleConsumer,
    TransactionChecker,
    TransactionResolution,
)


def config(endpoint):
    return ClientConfiguration(endpoint, Credentials(), request_timeout=10)


CHECKED = []


class CommitAll(TransactionChecker):
    def check(self, message):
        CHECKED.append(message.message_id)
        return TransactionResolution.COMMIT


def produce(endpoint, topic, mode, count, arg):
    tx = mode.startswith("tx-")
    producer = Producer(config(endpoint), (topic,), CommitAll() if tx else None)
    producer.startup()
    sent, errors = [], []
    futures = []
    if mode == "tx-checker":
        deadline = time.time() + float(arg)
        while time.time() < deadline and len(set(CHECKED)) < count:
            time.sleep(0.1)
        time.sleep(0.5)  # the EndTransaction of the last check goes out
        producer.shutdown()
        return {"sent": [], "deliveries": [], "errors": [], "checked": sorted(set(CHECKED))}
    try:
        for i in range(count):
            msg = Message()
            msg.topic = topic
            msg.body = f"p-{i}".encode()
            msg.tag = "TagA"
            msg.keys = f"k-{i}"
            msg.add_property("idx", str(i))
            if mode == "fifo":
                msg.message_group = f"g-{i % int(arg)}"
            elif mode == "delay":
                msg.delivery_timestamp = int(time.time() * 1000) + int(arg)
            try:
                if mode == "async":
                    futures.append((i, producer.send_async(msg)))
                elif tx:
                    transaction = producer.begin_transaction()
                    receipt = producer.send(msg, transaction)
                    if mode == "tx-commit":
                        transaction.commit()
                    elif mode == "tx-rollback":
                        transaction.rollback()
                    sent.append({"idx": i, "messageId": receipt.message_id})
                else:
                    sent.append({"idx": i, "messageId": producer.send(msg).message_id})
            except Exception as e:  # noqa: BLE001 - reported to the test
                errors.append(f"{i}: {e!r}")
        for i, fut in futures:
            try:
                sent.append({"idx": i, "messageId": fut.result(timeout=30).message_id})
            except Exception as e:  # noqa: BLE001
                errors.append(f"{i}: {e!r}")
    finally:
        if mode == "tx-orphan":  # die with the transactions open: the broker must check them back
            print(json.dumps({"sent": sent, "deliveries": [], "errors": errors}), flush=True)
            os._exit(0)
        producer.shutdown()
    return {"sent": sent, "deliveries": [], "errors": errors}


def describe(msg, ok=True):
    return {
        "messageId": msg.message_id,
        "idx": (msg.properties or {}).get("idx"),
        "tag": msg.tag,
        "attempt": msg.delivery_attempt,
        "group": msg.message_group or "",
        "body": msg.body.decode(errors="replace"),
        "ok": ok,
        "at": time.time(),
    }


def simple(endpoint, topic, group, count, seconds, invisible, how):
    consumer = SimpleConsumer(config(endpoint), group, {topic: FilterExpression()}, await_duration=3)
    consumer.startup()
    deliveries, errors = [], []
    done, changed = 0, set()
    deadline = time.time() + seconds
    try:
        while time.time() < deadline and done < count:
            try:
                msgs = consumer.receive(16, invisible)
            except Exception as e:  # noqa: BLE001
                errors.append(f"receive: {e!r}")
                continue
            for msg in msgs or ():
                deliveries.append(describe(msg))
                if how == "noack":
                    done += 1
                elif how == "change" and msg.message_id not in changed:
                    consumer.change_invisible_duration(msg, 1)
                    changed.add(msg.message_id)
                else:
                    consumer.ack(msg)
                    done += 1
    finally:
        consumer.shutdown()
    return {"sent": [], "deliveries": deliveries, "errors": errors}


def push(endpoint, topic, group, count, seconds, fail_attempts):
    deliveries, lock, ok = [], threading.Lock(), [0]

    calls = {}

    class Listener(MessageListener):
        # a message fails its first FAIL_ATTEMPTS calls; "attempt" is the call's number (the client's
        # FIFO retries are local: they do not raise the message's delivery_attempt)
        def consume(self, message):
            with lock:
                calls[message.message_id] = calls.get(message.message_id, 0) + 1
                success = calls[message.message_id] > fail_attempts
                entry = describe(message, success)
                entry["attempt"] = calls[message.message_id]
                entry["deliveryAttempt"] = message.delivery_attempt
                deliveries.append(entry)
                ok[0] += success
            return ConsumeResult.SUCCESS if success else ConsumeResult.FAILURE

    consumer = PushConsumer(config(endpoint), group, Listener(), {topic: FilterExpression()})
    consumer.startup()
    deadline = time.time() + seconds
    try:
        while time.time() < deadline and ok[0] < count:
            time.sleep(0.1)
        time.sleep(2)  # nothing more may arrive: duplicates would show
    finally:
        threading.Thread(target=consumer.shutdown, daemon=True).start()
        time.sleep(1)
    return {"sent": [], "deliveries": deliveries, "errors": []}


def receive_once(consumer, out):
    try:
        msgs = consumer.receive(16, 20)
    except Exception as e:  # noqa: BLE001 - reported to the test
        out["errors"].append(f"receive: {e!r}")
        return
    for msg in msgs or ():
        out["received"].append({"messageId": msg.message_id, "topic": msg.topic,
                                "body": msg.body.decode(errors="replace"),
                                "group": msg.message_group or "", "attempt": msg.delivery_attempt})
        consumer.ack(msg)


def polyglot(endpoint, plain, fifo, group, count, groups, per_group, seconds):
    """Plain sends, FIFO sends of the groups interleaved, then a SimpleConsumer receiving all back (and
    once more from the empty queues)."""
    out = {"client": "rocketmq-python-client", "plain": [], "fifo": [], "received": [], "errors": []}
    producer = Producer(config(endpoint), (plain, fifo))
    producer.startup()
    todo = [(plain, f"p-{i}", None) for i in range(int(count))]
    todo += [(fifo, f"{g}#{i}", g) for i in range(int(per_group)) for g in groups.split(",")]
    try:
        for topic, body, message_group in todo:
            msg = Message()
            msg.topic, msg.body, msg.tag = topic, body.encode(), "TagA"
            if message_group:
                msg.message_group = message_group
            try:
                receipt = producer.send(msg)
            except Exception as e:  # noqa: BLE001 - reported to the test
                out["errors"].append(f"{body}: {e!r}")
                continue
            sent = {"messageId": receipt.message_id, "body": body, "offset": int(receipt.offset)}
            if message_group:
                sent["group"] = message_group
            out["fifo" if message_group else "plain"].append(sent)
    finally:
        producer.shutdown()
    want = len(out["plain"]) + len(out["fifo"])
    subscriptions = {plain: FilterExpression(), fifo: FilterExpression()}
    consumer = SimpleConsumer(config(endpoint), group, subscriptions, await_duration=3)
    consumer.startup()
    deadline = time.time() + float(seconds)
    try:
        while time.time() < deadline and len(out["received"]) < want:
            receive_once(consumer, out)
        began = time.time()
        receive_once(consumer, out)  # on queues now empty: "no message", once the poll is over
        out["emptyWait"] = time.time() - began
    finally:
        consumer.shutdown()
    return out


def main(argv):
    if argv[0] == "polyglot":
        print(json.dumps(polyglot(*argv[1:])), flush=True)
        return
    endpoint, topic, kind = argv[0], argv[1], argv[2]
    if kind == "produce":
        out = produce(endpoint, topic, argv[3], int(argv[4]), argv[5] if len(argv) > 5 else "0")
    elif kind == "simple":
        out = simple(endpoint, topic, argv[3], int(argv[4]), float(argv[5]),
                     int(argv[6]) if len(argv) > 6 else 10, argv[7] if len(argv) > 7 else "ack")
    else:
        out = push(
            endpoint, topic, argv[3], int(argv[4]), float(argv[5]), int(argv[6]) if len(argv) > 6 else 0
        )
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(0)  # the client's scheduler threads must not keep the process alive
