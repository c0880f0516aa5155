"""The packet counters (nfacct objects) the host's kube-proxy makes for its metrics, in the host's
network namespace (a node's go with its namespace). Its iptables rules name them, so they can go
once those rules are gone. No tool removes them (``kube-proxy --cleanup`` neither, and the
``nfacct`` command is seldom installed): they are listed and deleted over netfilter's netlink socket.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct

KUBE_PROXY_COUNTERS = ("ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts")
_NFNL_ACCT = 7 << 8  # NFNL_SUBSYS_ACCT
_GET, _DELETE = 1, 3  # NFNL_MSG_ACCT_GET, NFNL_MSG_ACCT_DEL
_NLM_REQUEST, _NLM_ACK, _NLM_DUMP, _NLMSG_ERROR, _NLMSG_DONE = 1, 4, 0x300, 2, 3


def _nfacct(message: int, flags: int, name: str = "") -> list[bytes]:
    """One request to the nfacct subsystem; the payloads it answers (OSError on an error answer)."""
    attrs = b""
    if name:
        value = name.encode() + b"\0"
        attrs = struct.pack("=HH", 4 + len(value), 1) + value + b"\0" * (-len(value) % 4)  # NFACCT_NAME
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, 0) + attrs
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12) as sock:  # NETLINK_NETFILTER
        sock.settimeout(5)
        header = struct.pack("=IHHII", 16 + len(body), _NFNL_ACCT | message, _NLM_REQUEST | flags, 1, 0)
        sock.send(header + body)
        payloads: list[bytes] = []
        while True:
            data, offset = sock.recv(65536), 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                payload = data[offset + 16 : offset + length]
                if kind == _NLMSG_DONE:
                    return payloads
                if kind == _NLMSG_ERROR:
                    if error := -struct.unpack_from("=i", payload)[0]:
                        raise OSError(error, os.strerror(error))
                    return payloads
                payloads.append(payload)
                offset += max((length + 3) & ~3, 16)


def leftovers() -> list[str]:
    """The host's kube-proxy counters still present."""
    try:
        payloads = _nfacct(_GET, _NLM_DUMP)
    except OSError:  # no nfacct subsystem: nothing made any
        return []
    names = []
    for payload in payloads:
        offset = 4  # after the nfgenmsg header
        while offset + 4 <= len(payload):
            length, kind = struct.unpack_from("=HH", payload, offset)
            if kind & 0x3FFF == 1 and length >= 4:
                names.append(payload[offset + 4 : offset + length].rstrip(b"\0").decode(errors="replace"))
            offset += max((length + 3) & ~3, 4)
    return [n for n in names if n in KUBE_PROXY_COUNTERS]


def remove() -> None:
    """Delete them (one still named by a rule stays: remove the chains first)."""
    for name in leftovers():
        with contextlib.suppress(OSError):
            _nfacct(_DELETE, _NLM_ACK, name)
