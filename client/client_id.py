"""Who this client is to the brokers: the client id ``clientIP@instanceName``, made as the Java
client makes it (a non-loopback IPv4 address; ``pid#nanotime`` for the instance name)."""

from __future__ import annotations

import contextlib
import os
import socket
import time


def local_ip() -> str:
    """This host's address as peers see it (Java picks a non-loopback IPv4 address).

    A UDP ``connect`` picks the outgoing interface without sending anything.
    """
    for target in ("10.255.255.255", "8.8.8.8"):
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((target, 1))
            ip: str = s.getsockname()[0]
            if ip and not ip.startswith("0."):
                return ip
    with contextlib.suppress(OSError):
        return socket.gethostbyname(socket.gethostname())
    return "127.0.0.1"


def default_instance_name() -> str:
    """The instance name of a client given none: ``pid#nanotime``."""
    return f"{os.getpid()}#{time.monotonic_ns()}"
