"""``pyrocketmq quickstart``: a name server and a broker on loopback, a topic, a sample sent and read.

The two servers run as background processes that outlive this command; their data, logs and pid
files live under one folder (``.pyrocketmq`` by default). Running it again reuses servers that are
still up; ``--stop`` stops them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

TOPIC = "QuickstartTopic"
GROUP = "quickstart-consumer"


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _pick_port(preferred: int, span: tuple[int, int] = (0, 0)) -> int:
    """``preferred`` when it (and its neighbours ``span``) are free, else a free one."""
    for base in [preferred, *range(preferred + 100, preferred + 2000, 100)]:
        if all(_port_free(p) for p in range(base + span[0], base + span[1] + 1)):
            return base
    raise RuntimeError("no free port found")


def _alive(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, IndexError):
        return None


def _wait_port(port: int, proc: subprocess.Popen | None, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"exited with code {proc.returncode}; see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"port {port} did not open within {timeout:.0f}s; see {log}")


def _spawn(name: str, args: list[str], port: int, home: Path) -> tuple[int, int]:
    """Start (or find running) ``name``; returns (pid, port)."""
    pid_file = home / f"{name}.pid"
    pid = _alive(pid_file)
    if pid is not None:
        return pid, int(pid_file.read_text().split()[1])
    log = home / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyrocketmq", *args],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    _wait_port(port, proc, log)
    pid_file.write_text(f"{proc.pid} {port}\n")
    return proc.pid, port


def stop(home: Path) -> int:
    stopped = 0
    for name in ("broker", "namesrv"):
        pid_file = home / f"{name}.pid"
        pid = _alive(pid_file)
        if pid is None:
            continue
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if _alive(pid_file) is None:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
        pid_file.unlink(missing_ok=True)
        print(f"stopped {name} (pid {pid})")
        stopped += 1
    if not stopped:
        print(f"nothing running under {home}")
    return 0


async def _sample(namesrv: str, broker_addr: str, count: int) -> None:
    from pyrocketmq.client import Admin, Message, Producer, PullConsumer

    admin = Admin(namesrv)
    await admin.start()
    try:
        await admin.create_topic(TOPIC, broker_addr=broker_addr, read_queues=4, write_queues=4)
        # The name server learns about the topic with the broker's next registration (immediate).
        for _ in range(50):
            try:
                await admin.topic_route(TOPIC)
                break
            except Exception:
                await asyncio.sleep(0.1)
    finally:
        await admin.shutdown()
    print(f"created topic {TOPIC} with 4 queues on {broker_addr}")

    producer = Producer("quickstart-producer", namesrv)
    await producer.start()
    sent = []
    try:
        for i in range(count):
            tag = ("TagA", "TagB")[i % 2]
            body = f"hello pyrocketmq #{i}".encode()
            result = await producer.send(Message(TOPIC, body, tags=tag, keys=[f"order-{i}"]))
            sent.append(result)
            mq = result.message_queue
            print(
                f"  sent   #{i} {result.status.name:8} queue {mq.queue_id} offset {result.queue_offset} "
                f"msgId {result.msg_id}"
            )
    finally:
        await producer.shutdown()

    consumer = PullConsumer(GROUP, namesrv)
    await consumer.start()
    got = []
    try:
        # Each queue starts at the group's committed offset: a second run reads only what is new.
        await consumer.assign(await consumer.fetch_queues(TOPIC))
        deadline = time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline:
            for msg in await consumer.poll(timeout=1.0):
                got.append(msg)
                print(
                    f"  read   queue {msg.queue_id} offset {msg.queue_offset} tags {msg.tags} "
                    f"keys {' '.join(msg.keys)} body {msg.body.decode(errors='replace')!r}"
                )
        await consumer.commit()
    finally:
        await consumer.shutdown()
    print(f"sent {len(sent)} messages, read {len(got)} back as group {GROUP} (offsets committed)")
    if len(got) < count:
        raise RuntimeError(f"read only {len(got)} of {count} messages")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pyrocketmq quickstart", description=__doc__.splitlines()[0])
    p.add_argument(
        "--home", default=".pyrocketmq", help="folder for data, logs and pid files (default: .pyrocketmq)"
    )
    p.add_argument("--count", type=int, default=10, help="messages to send and read back (default: 10)")
    p.add_argument("--stop", action="store_true", help="stop the name server and broker started here")
    args = p.parse_args(argv)
    home = Path(args.home).resolve()
    if args.stop:
        return stop(home)
    if args.count < 1:
        p.error("--count must be at least 1")
    home.mkdir(parents=True, exist_ok=True)
    try:
        ns_port = _pick_port(9876)
        ns_pid, ns_port = _spawn("namesrv", ["namesrv", "--listen-port", str(ns_port)], ns_port, home)
        namesrv = f"127.0.0.1:{ns_port}"
        broker_port = _pick_port(10911, (-2, 1))
        conf = home / "broker.conf"
        if not _alive(home / "broker.pid"):
            conf.write_text(
                "brokerClusterName=DefaultCluster\n"
                "brokerName=broker-a\n"
                "brokerId=0\n"
                f"namesrvAddr={namesrv}\n"
                f"listenPort={broker_port}\n"
                "brokerIP1=127.0.0.1\n"
                f"storePathRootDir={home / 'store'}\n"
                "flushDiskType=ASYNC_FLUSH\n"
                "autoCreateTopicEnable=true\n"
                "mappedFileSizeCommitLog=67108864\n"
            )
        br_pid, br_port = _spawn("broker", ["broker", "-c", str(conf)], broker_port, home)
        print(f"name server  127.0.0.1:{ns_port}  (pid {ns_pid})")
        print(f"broker       127.0.0.1:{br_port}  (pid {br_pid}, broker-a, cluster DefaultCluster)")
        asyncio.run(_sample(namesrv, f"127.0.0.1:{br_port}", args.count))
    except Exception as e:  # a quickstart reports, it does not dump a traceback
        print(f"quickstart failed: {e}", file=sys.stderr)
        print(f"logs: {home / 'logs'}", file=sys.stderr)
        return 1
    print()
    print(f"data:  {home / 'store'}")
    print(f"logs:  {home / 'logs'}/namesrv.log, {home / 'logs'}/broker.log")
    print(f"try:   .venv/bin/pyrocketmq admin topicStatus -n {namesrv} -t {TOPIC}")
    print(f"stop:  ./scripts/quickstart.sh --stop    (or kill {ns_pid} {br_pid})")
    return 0
