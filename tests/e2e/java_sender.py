"""The unmodified Apache RocketMQ 4.9 Java producer (default settings) sending from the node while a
test does its worst: ``tests/conformance/java/FailoverProducer.java`` run until told to stop.

    with JavaSender(namesrv, topic) as java:
        ...  # faults
    java.ok        # {offsetMsgId: body} of every SEND_OK
    java.ok_at     # monotonic time of each SEND_OK, comparable with time.monotonic() here
    java.writable_after(frozen_at, on="10.0.1.7")  # seconds to the first SEND_OK stored there
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pyrocketmq.remoting.msg_id import decode_offset_msg_id
from tests.conformance import maven
from tests.conformance.jvm import JavaPrograms, JavaResult

LONGEST_S = 7200
"""The program stops by itself after this long, whatever happens to the test."""


class JavaSender:
    def __init__(self, namesrv: str, topic: str, pause_ms: int = 20) -> None:
        self.namesrv, self.topic, self.pause_ms = namesrv, topic, pause_ms
        self.ok: dict[str, bytes] = {}
        self.ok_at: list[float] = []
        self._stored_on: list[str] = []
        self.failures = 0
        self.first_failure: str | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="java-sender-"))
        self._stop = self._dir / "stop"
        self._result: dict[str, JavaResult] = {}
        self._programs = JavaPrograms(maven.resolve(maven.CLIENT), log_dir=self._dir)
        self._programs.compile()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        args = [self.namesrv, self.topic, LONGEST_S, self._stop, self.pause_ms]
        self._result["out"] = self._programs.run("FailoverProducer", args, timeout=LONGEST_S + 120)

    def __enter__(self) -> JavaSender:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.touch()
        self._thread.join(120)
        try:
            out = self._result.get("out")
            if out is None:
                raise AssertionError("the Java producer did not stop within 120 s of being told to")
            self._read(out.json())
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)

    def _read(self, report: dict[str, Any]) -> None:
        # its times are wall-clock milliseconds; ours are monotonic
        offset = time.time() - time.monotonic()
        for rec in report["acked"]:
            self.ok[str(rec["offsetMsgId"])] = str(rec["body"]).encode()
            self.ok_at.append(rec["atMs"] / 1000 - offset)
            self._stored_on.append(decode_offset_msg_id(str(rec["offsetMsgId"]))[0])
        self.failures = int(report["failures"])
        self.first_failure = report.get("firstFailure")

    def writable_after(self, since: float, on: str | None = None) -> float | None:
        """Seconds from ``since`` (monotonic) to its first SEND_OK after it (stored on the broker of
        IP ``on``, if given); None if there was none."""
        return next((t - since for t, host in zip(self.ok_at, self._stored_on, strict=True)
                     if t > since and on in (None, host)), None)  # fmt: skip
