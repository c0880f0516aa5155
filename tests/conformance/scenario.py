"""The Java round trip shared by ``test_java_vs_apache.py`` and ``test_java_vs_pyrocketmq.py``.

One function, one cluster parameter: whatever passes against Apache RocketMQ must pass, unchanged,
against pyrocketmq. Steps (one JVM per step, not per message):

1. ``ProducerScenario`` → auto-created topic (TBW102 path, 4 queues): ``count`` sync sends
   (SEND_MESSAGE_V2), 50 async, 20 oneway, one batch of 10 (SEND_BATCH_MESSAGE), one 6000-byte body
   (zlib-compressed by the client).
2. ``AdminScenario`` creates a 6-queue topic on the broker (UPDATE_AND_CREATE_TOPIC), then
   ``ProducerScenario`` sends ``count`` sync messages to it with ``sendSmartMsg=false`` (SEND_MESSAGE, 10).
3. ``PullScenario`` reads both topics from the start: lite pull consumer (assign + seekToBegin) for the
   first, ``DefaultMQPullConsumer`` for the second.
4. ``ViewScenario`` looks a sample up by offset msgId (VIEW_MESSAGE_BY_ID), by uniq msgId and by key
   (QUERY_MESSAGE).

Every mismatch is collected and reported together (first ``MAX_SHOWN``), so one run tells a broker
developer everything that is off.
"""

from __future__ import annotations

import uuid
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from tests.conformance.jvm import JavaPrograms
from tests.helpers.cluster import Cluster

UNICODE_VALUE = "h\u00e9llo"
MAX_SHOWN = 40


@dataclass
class Problems:
    items: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str) -> bool:
        if not ok:
            self.items.append(what)
        return ok

    def raise_if_any(self, cluster: Cluster) -> None:
        if self.items:
            shown = "\n  ".join(self.items[:MAX_SHOWN])
            more = f"\n  ... and {len(self.items) - MAX_SHOWN} more" if len(self.items) > MAX_SHOWN else ""
            raise AssertionError(
                f"{len(self.items)} conformance problem(s) against the {cluster.kind} cluster:\n"
                f"  {shown}{more}"
            )


def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """``(ip:port, commitlog offset)`` from an offset msgId (PROTOCOL.md §4)."""
    raw = bytes.fromhex(msg_id)
    ip_len = 4 if len(raw) == 16 else 16
    if ip_len == 4:
        host = ".".join(str(b) for b in raw[:4])
    else:
        import ipaddress

        host = str(ipaddress.IPv6Address(raw[:16]))
    port = int.from_bytes(raw[ip_len : ip_len + 4], "big")
    offset = int.from_bytes(raw[ip_len + 4 : ip_len + 12], "big")
    return f"{host}:{port}", offset


def check_sends(
    p: Problems, label: str, produced: dict[str, Any], cluster: Cluster, queue_count: int
) -> None:
    sent = produced["sent"]
    p.check(
        produced["errors"] == 0,
        f"{label}: {produced['errors']} send error(s), first: "
        f"{next((s for s in sent if 'error' in s), None)}",
    )
    seen_positions: set[tuple[int, int]] = set()
    for s in sent:
        if "error" in s:
            continue
        tag = f"{label} {s['kind']} #{s['idx']}"
        p.check(bool(s.get("msgId")), f"{tag}: no msgId")
        if s["kind"] == "oneway":
            continue
        p.check(s["status"] == "SEND_OK", f"{tag}: status {s['status']}")
        p.check(s["brokerName"] == cluster.broker_name, f"{tag}: brokerName {s['brokerName']!r}")
        p.check(
            0 <= s["queueId"] < queue_count, f"{tag}: queueId {s['queueId']} outside 0..{queue_count - 1}"
        )
        pos = (s["queueId"], s["queueOffset"])
        p.check(pos not in seen_positions, f"{tag}: (queueId, queueOffset) {pos} returned twice")
        seen_positions.add(pos)
        try:
            store_host, _ = decode_offset_msg_id(s["offsetMsgId"])
            p.check(
                store_host == cluster.broker_addr,
                f"{tag}: offsetMsgId {s['offsetMsgId']} names {store_host}, not {cluster.broker_addr}",
            )
        except (ValueError, TypeError) as exc:
            p.check(False, f"{tag}: undecodable offsetMsgId {s.get('offsetMsgId')!r}: {exc}")
    used = {s["queueId"] for s in sent if s.get("queueId") is not None}
    p.check(
        used == set(range(queue_count)),
        f"{label}: sends used queues {sorted(used)}, expected all of 0..{queue_count - 1}",
    )


def check_read_back(
    p: Problems, label: str, produced: dict[str, Any], pulled: dict[str, Any], cluster: Cluster, topic: str
) -> None:
    sent = [s for s in produced["sent"] if "error" not in s]
    messages = pulled["messages"]
    p.check(
        not pulled["timedOut"] and len(messages) == len(sent),
        f"{label}: read {len(messages)} message(s) back, sent {len(sent)} (timedOut={pulled['timedOut']})",
    )
    by_id = {m["msgId"]: m for m in messages}
    p.check(len(by_id) == len(messages), f"{label}: {len(messages) - len(by_id)} msgId(s) read back twice")
    for s in sent:
        tag = f"{label} {s['kind']} #{s['idx']}"
        m = by_id.get(s["msgId"])
        if not p.check(m is not None, f"{tag}: msgId {s['msgId']} not read back"):
            continue
        assert m is not None
        p.check(m["topic"] == topic, f"{tag}: topic {m['topic']!r}")
        p.check(
            m["bodySha1"] == s["bodySha1"] and m["bodyLen"] == s["bodyLen"],
            f"{tag}: body differs (len {m['bodyLen']} vs {s['bodyLen']})",
        )
        p.check(m["tags"] == s["tags"], f"{tag}: tags {m['tags']!r} != {s['tags']!r}")
        p.check(m["keys"] == s["keys"], f"{tag}: keys {m['keys']!r} != {s['keys']!r}")
        want_user = {"idx": str(s["idx"]), "p-unicode": UNICODE_VALUE}
        p.check(m["userProperties"] == want_user, f"{tag}: user properties {m['userProperties']!r}")
        props = m["properties"]
        p.check(props.get("UNIQ_KEY") == s["msgId"], f"{tag}: UNIQ_KEY {props.get('UNIQ_KEY')!r}")
        p.check(
            props.get("CLUSTER") == cluster.cluster_name, f"{tag}: CLUSTER property {props.get('CLUSTER')!r}"
        )
        p.check(m["reconsumeTimes"] == 0, f"{tag}: reconsumeTimes {m['reconsumeTimes']}")
        p.check(m["storeHost"] == cluster.broker_addr, f"{tag}: storeHost {m['storeHost']!r}")
        p.check(str(m["bornHost"]).startswith("127.0.0.1:"), f"{tag}: bornHost {m['bornHost']!r}")
        p.check(
            m["storeTimestamp"] >= m["bornTimestamp"] - 5000,
            f"{tag}: storeTimestamp {m['storeTimestamp']} long before bornTimestamp {m['bornTimestamp']}",
        )
        if s["kind"] == "big":
            p.check(
                m["sysFlag"] & 0x1 == 0x1,
                f"{tag}: compressed message read back with sysFlag {m['sysFlag']:#x}",
            )
        else:
            p.check(m["sysFlag"] == 0, f"{tag}: sysFlag {m['sysFlag']:#x}")
            body = f"body-{s['idx']}".encode()
            crc = zlib.crc32(body) & 0x7FFFFFFF
            p.check(m["bodyCRC"] == crc, f"{tag}: bodyCRC {m['bodyCRC']} != {crc}")
        if s["kind"] != "oneway":
            p.check(
                (m["queueId"], m["queueOffset"]) == (s["queueId"], s["queueOffset"]),
                f"{tag}: stored at {(m['queueId'], m['queueOffset'])}, send result said "
                f"{(s['queueId'], s['queueOffset'])}",
            )
            p.check(
                m["offsetMsgId"] == s["offsetMsgId"],
                f"{tag}: offsetMsgId {m['offsetMsgId']} != send result {s['offsetMsgId']}",
            )
            try:
                _, phys = decode_offset_msg_id(s["offsetMsgId"])
                p.check(
                    m["commitLogOffset"] == phys,
                    f"{tag}: commitLogOffset {m['commitLogOffset']} != offsetMsgId's {phys}",
                )
            except (ValueError, TypeError):
                pass
    offsets: dict[int, list[int]] = defaultdict(list)
    for m in messages:
        offsets[m["queueId"]].append(m["queueOffset"])
    for qid, offs in sorted(offsets.items()):
        p.check(
            sorted(offs) == list(range(len(offs))),
            f"{label}: queue {qid} offsets are not 0..{len(offs) - 1}: {sorted(offs)[:10]}...",
        )


def check_lookups(
    p: Problems, viewed: dict[str, Any], sent_by_id: dict[str, dict[str, Any]], topic: str
) -> None:
    for r in viewed["results"]:
        tag = f"view {r['kind']}:{r['id']}"
        if not p.check(r["found"], f"{tag}: not found ({r.get('error')})"):
            continue
        if r["kind"] == "key":
            p.check(
                all(m["keys"] == r["id"] for m in r["messages"]),
                f"{tag}: returned messages with other keys {[m['keys'] for m in r['messages']]}",
            )
            continue
        if r["kind"] == "offset":
            p.check(len(r["messages"]) == 1, f"{tag}: {len(r['messages'])} messages")
            m = r["messages"][0]
            s = next((x for x in sent_by_id.values() if x.get("offsetMsgId") == r["id"]), None)
            p.check(
                m["offsetMsgId"] == r["id"], f"{tag}: offsetMsgId {m['offsetMsgId']} != the one looked up"
            )
        else:
            s = sent_by_id.get(r["id"])
            m = next((x for x in r["messages"] if x["uniqKey"] == r["id"]), r["messages"][0])
            p.check(m["uniqKey"] == r["id"], f"{tag}: no message with that UNIQ_KEY")
        if s is None:
            p.check(False, f"{tag}: the test looked up an id it did not send")
            continue
        p.check(m["topic"] == topic, f"{tag}: topic {m['topic']!r}")
        p.check(m["uniqKey"] == s["msgId"], f"{tag}: UNIQ_KEY {m['uniqKey']} != {s['msgId']}")
        p.check(m["bodySha1"] == s["bodySha1"], f"{tag}: body differs")
        p.check(
            m["userProperties"] == {"idx": str(s["idx"]), "p-unicode": UNICODE_VALUE},
            f"{tag}: user properties {m['userProperties']!r}",
        )


def run_java_roundtrip(cluster: Cluster, java: JavaPrograms, count: int = 1000) -> None:
    """Produce with the Java client, read back with Java consumers and admin tools; assert equality."""
    suffix = uuid.uuid4().hex[:8]
    ns = cluster.namesrv_addr
    auto_topic = f"ConfAuto_{suffix}"
    admin_topic = f"ConfAdmin_{suffix}"
    p = Problems()

    # 1. auto-created topic, every send mode
    produced_auto = java.run(
        "ProducerScenario", [ns, auto_topic, count, "sync,async=50,oneway=20,batch=10,big"], timeout=240
    ).json()
    check_sends(p, "auto-topic", produced_auto, cluster, queue_count=4)

    # 2. topic created through the admin API, legacy SEND_MESSAGE header
    created = java.run("AdminScenario", [ns, cluster.broker_addr, admin_topic, 6], timeout=90).json()
    route = created.get("route") or {}
    p.check(
        [
            (q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"])
            for q in route.get("queueDatas", [])
        ]
        == [(cluster.broker_name, 6, 6, 6)],
        f"admin-topic: route after create {route!r}",
    )
    produced_admin = java.run(
        "ProducerScenario",
        [ns, admin_topic, count, "sync"],
        timeout=240,
        jvm_props={"org.apache.rocketmq.client.sendSmartMsg": "false"},
    ).json()
    check_sends(p, "admin-topic", produced_admin, cluster, queue_count=6)
    p.raise_if_any(cluster)  # nothing to read back if sending is broken

    # 3. read everything back
    expected_auto = sum(1 for s in produced_auto["sent"] if "error" not in s)
    pulled_auto = java.run(
        "PullScenario", [ns, auto_topic, f"cg_lite_{suffix}", expected_auto, 60, "lite"], timeout=120
    ).json()
    check_read_back(p, "auto-topic/lite", produced_auto, pulled_auto, cluster, auto_topic)
    expected_admin = len(produced_admin["sent"])
    pulled_admin = java.run(
        "PullScenario", [ns, admin_topic, f"cg_pull_{suffix}", expected_admin, 60, "pull"], timeout=120
    ).json()
    check_read_back(p, "admin-topic/pull", produced_admin, pulled_admin, cluster, admin_topic)

    # 4. lookups the way mqadmin does them
    sent_by_id = {s["msgId"]: s for s in produced_auto["sent"] if "error" not in s}
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in sent_by_id.values():
        by_kind[s["kind"]].append(s)
    sample = by_kind["sync"][:5] + by_kind["async"][:2] + by_kind["batch"][:2] + by_kind["big"]
    lookups = [f"offset:{s['offsetMsgId']}" for s in sample]
    lookups += [f"uniq:{s['msgId']}" for s in by_kind["sync"][5:7] + by_kind["oneway"][:1] + by_kind["big"]]
    lookups += ["key:key-7"]
    viewed = java.run("ViewScenario", [ns, auto_topic, *lookups], timeout=120).json()
    check_lookups(p, viewed, sent_by_id, auto_topic)

    p.raise_if_any(cluster)
