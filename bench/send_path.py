"""``python -m bench.send_path``: our broker's CPU per send, without a Java load generator beside it.

Our own measure, not a side-by-side row. The rows of ``python -m bench`` share two cores between the
broker and a JVM producer, so on a busy machine the broker's CPU per message is hard to read off
them. Here one driver thread keeps ``--depth`` SEND_MESSAGE_V2 requests in flight over one
connection (what a Java producer's threads do over its one channel): the frames are encoded
beforehand as a 4.9.7 Java producer encodes them (JSON header, the one-letter V2 fields, a UNIQ_KEY
per message), and each answer read lets the next request go. The broker's threads are read from
``/proc`` before and after the timed part, so the figure is the broker's own: CPU microseconds per
acknowledged send, for its main thread, its flush thread and in all, with the throughput beside it.

Compare two trees by running this from each in turn (``PYTHONPATH=<tree>``), several times: single
runs on a shared machine move by tens of percent.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench import clusters

TOPIC = "Bench_send_path"
_LEN = struct.Struct(">i")


def java_send_frames(count: int, size: int, *, sync_wait: bool = True) -> list[bytes]:
    """``count`` SEND_MESSAGE_V2 frames as a 4.9.7 Java producer writes them (opaque 1..count)."""
    from pyrocketmq.remoting.code import LanguageCode, RequestCode
    from pyrocketmq.remoting.command import RemotingCommand, encode

    head = uuid.uuid4().hex[:20].upper()
    body = os.urandom(size)
    born = int(time.time() * 1000)
    frames = []
    for i in range(count):
        props = f"UNIQ_KEY\x01{head}{i:012X}\x02WAIT\x01{'true' if sync_wait else 'false'}\x02"
        ext = {"a": "BenchProducer", "b": TOPIC, "c": "TBW102", "d": "4", "e": str(i % 8), "f": "0",
               "g": str(born + i), "h": "0", "i": props, "j": "0", "k": "false", "m": "false"}
        cmd = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, opaque=i + 1, ext_fields=ext, body=body,
                              language=LanguageCode.JAVA, version=395)
        frames.append(encode(cmd))
    return frames


@dataclass
class Threads:
    """CPU seconds (user + system) of a process's threads by name, and in all."""

    by_name: dict[str, float]

    @classmethod
    def read(cls, pid: int) -> Threads:
        out: dict[str, float] = {}
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                stat = (task / "stat").read_text()
            except OSError:
                continue
            key = "main" if task.name == str(pid) else stat[stat.index("(") + 1 : stat.rindex(")")]
            out[key] = out.get(key, 0.0) + clusters.stat_cpu_seconds(stat)
        return cls(out)

    def minus(self, before: Threads) -> dict[str, float]:
        return {k: v - before.by_name.get(k, 0.0) for k, v in self.by_name.items()}


def drive(addr: str, frames: list[bytes], depth: int, seconds: float) -> int:
    """Keep ``depth`` requests in flight for ``seconds``; the number of answers read (each must be
    SEND_OK, code 0)."""
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    n = len(frames)
    sent = 0
    answered = 0
    buf = bytearray()
    try:
        sock.sendall(b"".join(frames[i % n] for i in range(depth)))
        sent = depth
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            buf += chunk
            got = 0
            pos = 0
            while len(buf) - pos >= 8:
                (length,) = _LEN.unpack_from(buf, pos)
                if len(buf) - pos - 4 < length:
                    break
                hlen = _LEN.unpack_from(buf, pos + 4)[0] & 0xFFFFFF
                if b'"code":0' not in bytes(buf[pos + 8 : pos + 8 + hlen]):
                    raise RuntimeError(
                        f"a send was not answered SEND_OK: {bytes(buf[pos + 8 : pos + 8 + hlen])[:300]!r}"
                    )
                pos += 4 + length
                got += 1
            del buf[:pos]
            answered += got
            if got:
                sock.sendall(b"".join(frames[(sent + i) % n] for i in range(got)))
                sent += got
        return answered
    finally:
        sock.close()


@dataclass
class Result:
    tps: float
    us_per_send: dict[str, float]


def run_once(flush: str, depth: int, size: int, seconds: float, warmup: float) -> Result:
    with tempfile.TemporaryDirectory(prefix="send-path-") as tmp:
        cluster, _ = clusters.start("pyrocketmq", Path(tmp) / "home", flush)
        try:
            clusters.create_topic(cluster, TOPIC)
            frames = java_send_frames(4096, size)
            pid = clusters.broker_process(cluster).pid
            assert pid is not None, "the broker process has no pid"
            drive(cluster.broker_addr, frames, depth, warmup)
            before = Threads.read(pid)
            started = time.monotonic()
            answered = drive(cluster.broker_addr, frames, depth, seconds)
            elapsed = time.monotonic() - started
            used = Threads.read(pid).minus(before)
        finally:
            cluster.stop()
    total = sum(used.values())
    per = {k: v * 1e6 / answered for k, v in sorted(used.items(), key=lambda kv: -kv[1]) if v > 0}
    per["all"] = total * 1e6 / answered
    return Result(answered / elapsed, per)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.send_path", description=__doc__.splitlines()[0])
    p.add_argument("--flush", default="SYNC_FLUSH", choices=("SYNC_FLUSH", "ASYNC_FLUSH"))
    p.add_argument("--depth", type=int, default=64, help="requests in flight (a Java producer's threads)")
    p.add_argument("--size", type=int, default=128, help="body bytes")
    p.add_argument("--seconds", type=float, default=10.0, help="timed part of each run")
    p.add_argument("--warmup", type=float, default=3.0, help="untimed sends first")
    p.add_argument("--runs", type=int, default=1, help="runs (a broker each); medians printed")
    args = p.parse_args(argv)
    if args.depth < 1 or args.size < 0 or args.seconds <= 0 or args.warmup < 0 or args.runs < 1:
        p.error("--depth and --runs must be at least 1, --size at least 0, --seconds above 0")
    results = []
    for r in range(args.runs):
        res = run_once(args.flush, args.depth, args.size, args.seconds, args.warmup)
        results.append(res)
        threads = ", ".join(f"{k} {v:.1f}" for k, v in res.us_per_send.items())
        print(f"run {r + 1}: {res.tps:.0f} sends/s; broker us CPU per send: {threads}", flush=True)
    print(f"median: {statistics.median(r.tps for r in results):.0f} sends/s, "
          f"{statistics.median(r.us_per_send['all'] for r in results):.1f} us of broker CPU per send "
          f"(main thread {statistics.median(r.us_per_send.get('main', 0.0) for r in results):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
