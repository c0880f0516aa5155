"""``python -m bench.send_path``: Java-shaped send frames, the in-flight window, bad arguments."""

from __future__ import annotations

import os
import socket
import struct
import threading

import pytest

from bench import send_path
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import FrameDecoder, RemotingCommand, decode_frame, encode
from pyrocketmq.remoting.header import SendMessageRequestHeader
from pyrocketmq.remoting.message import decode_properties


def test_frames_are_v2_sends_with_one_uniq_key_each():
    frames = send_path.java_send_frames(5, 100)
    keys = set()
    for i, frame in enumerate(frames):
        (length,) = struct.unpack_from(">i", frame)
        assert length == len(frame) - 4
        cmd = decode_frame(frame[4:])
        assert cmd.code == RequestCode.SEND_MESSAGE_V2 and cmd.opaque == i + 1 and len(cmd.body) == 100
        h = SendMessageRequestHeader.from_command(cmd)
        assert (h.topic, h.queue_id) == (send_path.TOPIC, i % 8)
        props = decode_properties((h.properties or "").encode())
        assert props["WAIT"] == "true"
        keys.add(props["UNIQ_KEY"])
    assert len(keys) == 5


class _Answerer:
    """A TCP peer answering every request frame with ``code`` (SEND_OK is 0), counting the most
    requests it ever had unanswered at once (what it read minus what it answered)."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.requests = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        decoder = FrameDecoder()
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                answers = []
                for cmd in decoder.feed(chunk):
                    self.requests += 1
                    answers.append(encode(RemotingCommand(self.code, opaque=cmd.opaque, flag=1)))
                try:
                    conn.sendall(b"".join(answers))
                except OSError:
                    return

    def close(self) -> None:
        self.listener.close()
        self.thread.join(5)


def test_drive_keeps_the_window_full_and_counts_answers():
    peer = _Answerer(code=0)
    try:
        answered = send_path.drive(peer.addr, send_path.java_send_frames(16, 10), depth=4, seconds=0.3)
    finally:
        peer.close()
    assert answered > 4
    assert answered <= peer.requests <= answered + 4  # never more than the window unanswered


def test_drive_fails_on_an_answer_that_is_not_send_ok():
    peer = _Answerer(code=14)  # SERVICE_NOT_AVAILABLE
    try:
        with pytest.raises(RuntimeError, match="not answered SEND_OK"):
            send_path.drive(peer.addr, send_path.java_send_frames(4, 10), depth=2, seconds=5)
    finally:
        peer.close()


def test_threads_of_this_process_are_read():
    threads = send_path.Threads.read(os.getpid())
    sum(range(200_000))
    later = send_path.Threads.read(os.getpid()).minus(threads)
    assert "main" in threads.by_name and later["main"] >= 0


@pytest.mark.parametrize(
    "argv", [["--depth", "0"], ["--seconds", "0"], ["--flush", "SYNC_MASTER"], ["--runs", "x"]]
)
def test_bad_arguments_print_usage(argv, capsys):
    with pytest.raises(SystemExit) as e:
        send_path.main(argv)
    assert e.value.code == 2
    assert "usage: python -m bench.send_path" in capsys.readouterr().err
