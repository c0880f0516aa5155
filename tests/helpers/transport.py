"""An asyncio transport for a :class:`~pyrocketmq.remoting.transport.Connection` without a socket."""

from __future__ import annotations


class FakeTransport:
    """A peer at 127.0.0.1:50000 that takes every write and drops it; never paused, never backed up."""

    def __init__(self) -> None:
        self.closing = False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def write(self, data: bytes) -> None:
        pass

    def writelines(self, chunks: list[bytes]) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class RecordingTransport(FakeTransport):
    """Keeps what is written (``written``) and whether it was aborted (``aborted``)."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.written += bytes(data)

    def writelines(self, chunks: list[bytes]) -> None:
        for c in chunks:
            self.write(c)

    def abort(self) -> None:
        self.closing = self.aborted = True
