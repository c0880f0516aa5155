"""Whether a ``host:port`` a peer announces (a broker's address, its HA address) is one: pure.

Java writes addresses as ``host:port`` with the host as ``InetAddress.getHostAddress()`` gives it,
so an IPv6 host has no brackets (``fe80::1:10911``): the port is what follows the last colon.
A host is an IPv4 or IPv6 literal (brackets and a ``%scope`` allowed) or a DNS name; the port is
decimal digits only, 1..65535.

>>> address_problem("10.0.0.1:10911"), address_problem("broker-a-0.broker-a.ns.svc:10911")
(None, None)
>>> address_problem("10.0.0.1:0")
'port 0 is outside 1..65535'
"""

from __future__ import annotations

import ipaddress
import re

MAX_ADDRESS_LENGTH = 261
"""A DNS name (253) with ``:65535``, or an IPv6 literal with a scope and a port."""
MAX_HOST_LENGTH = 253
_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def host_problem(host: str) -> str | None:
    """Why ``host`` is neither an IP literal nor a DNS name, or None."""
    if not host:
        return "the host is empty"
    if len(host) > MAX_HOST_LENGTH:
        return f"the host is longer than {MAX_HOST_LENGTH} characters"
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(literal)
        return None
    except ValueError:
        pass
    labels = host.removesuffix(".").split(".")
    if all(_LABEL.fullmatch(label) for label in labels) and not labels[-1].isdigit():
        return None
    return f"host {host[:64]!r} is neither an IP address nor a DNS name"


def address_problem(addr: str | None) -> str | None:
    """Why ``addr`` is no ``host:port``, or None when it is one (see the module docstring)."""
    if not addr:
        return "the address is empty"
    if len(addr) > MAX_ADDRESS_LENGTH:
        return f"the address is longer than {MAX_ADDRESS_LENGTH} characters"
    host, sep, port = addr.rpartition(":")
    if not sep:
        return f"address {addr[:64]!r} has no port: expected host:port"
    if not port.isascii() or not port.isdigit() or len(port) > 5:
        return f"port {port[:16]!r} is not a number"
    if not 1 <= int(port) <= 65535:
        return f"port {int(port)} is outside 1..65535"
    return host_problem(host)
