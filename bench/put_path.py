"""``python -m bench.put_path``: the store's single-message put, compiled against pure Python.

Our own A/B, not a side-by-side row: it times ``MessageStore.put_message`` (record encoding, commitlog
append, consume-queue unit, index entries) for messages shaped like a Java producer's (a UNIQ_KEY, a
body of ``--size`` bytes), in child processes that alternate between the compiled store path and
``PYROCKETMQ_PURE_PYTHON=1``. Each child warms its store up first (index slots, page faults) and
reports the CPU time of its main thread per put; the medians of the rounds and their ratio are
printed. On a shared machine run several rounds: single runs move by tens of percent.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

CHILD_FLAG = "--child"


def _child(messages: int, size: int) -> float:
    from pyrocketmq.broker.settings import BrokerSettings
    from pyrocketmq.broker.store.message_store import MessageStore
    from pyrocketmq.broker.store.values import MessageInner
    from pyrocketmq.remoting.message import decode_properties, pack_host

    with tempfile.TemporaryDirectory(prefix="put-path-") as root:
        settings = BrokerSettings.from_conf({"storePathRootDir": root, "brokerIP1": "127.0.0.1"})
        store = MessageStore(settings.store, ("127.0.0.1", 10911))
        store.load()
        born, here = pack_host("127.0.0.1", 50000), pack_host("127.0.0.1", 10911)
        head = uuid.uuid4().hex[:20].upper()
        body = b"x" * size

        def message(i: int) -> MessageInner:
            raw = f"UNIQ_KEY\x01{head}{i:012X}\x02".encode()
            return MessageInner(
                topic="BenchmarkTest", body=body, flag=0, properties=decode_properties(raw),
                properties_bytes=raw + b"CLUSTER\x01DefaultCluster", queue_id=i % 8, sys_flag=0,
                born_timestamp=int(time.time() * 1000), born_host=born, store_host=here, reconsume_times=0,
                prepared_transaction_offset=0, tags_code=0, keys=None,
            )

        warm = [message(i) for i in range(messages)]
        timed = [message(messages + i) for i in range(messages)]
        try:
            for m in warm:
                store.put_message(m)
            started = time.thread_time()
            for m in timed:
                store.put_message(m)
            return (time.thread_time() - started) / messages
        finally:
            store.shutdown()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.put_path", description=__doc__.splitlines()[0])
    p.add_argument(
        "--messages", type=int, default=30_000, help="puts timed per child (as many again warm up)"
    )
    p.add_argument("--size", type=int, default=128, help="body bytes")
    p.add_argument("--rounds", type=int, default=3, help="pairs of children (compiled, pure Python)")
    p.add_argument(CHILD_FLAG, action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.messages < 1 or args.size < 0 or args.rounds < 1:
        p.error("--messages and --rounds must be at least 1, --size at least 0")
    if args.child:
        print(_child(args.messages, args.size))
        return 0
    from pyrocketmq.broker.store.native import NATIVE

    if NATIVE is None:
        print("the compiled store path is not built (pip install -e . with a C compiler): nothing to compare",
              file=sys.stderr)
        return 1
    times: dict[str, list[float]] = {"compiled": [], "python": []}
    for r in range(args.rounds):
        order = ("compiled", "python") if r % 2 == 0 else ("python", "compiled")
        for kind in order:
            env = dict(os.environ, PYROCKETMQ_PURE_PYTHON="1" if kind == "python" else "")
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bench.put_path",
                    CHILD_FLAG,
                    "--messages",
                    str(args.messages),
                    "--size",
                    str(args.size),
                ],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            times[kind].append(float(out.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1} {kind:8s} {times[kind][-1] * 1e6:7.2f} us/put", flush=True)
    compiled, python = statistics.median(times["compiled"]), statistics.median(times["python"])
    print(f"median: compiled {compiled * 1e6:.2f} us/put, pure Python {python * 1e6:.2f} us/put, "
          f"compiled/python {compiled / python:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
