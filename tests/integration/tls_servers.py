"""A name server and a broker that accept TLS only, the broker registering with the name server
over TLS: what the Python and the Java clients' TLS tests run against."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.certs import Certs, make_certs

from .procs import Proc, free_port, start_broker


@contextlib.contextmanager
def tls_only_servers(tmp: Path) -> Iterator[tuple[Proc, Proc, Certs]]:
    """``(name server, broker, certificates)`` under ``tmp``; both processes stopped on exit."""
    certs = make_certs(tmp / "certs")
    server = {"tls.server.mode": "enforcing", "tls.server.certPath": certs.server_cert,
              "tls.server.keyPath": certs.server_key}
    port = free_port()
    conf = tmp / "namesrv.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in {"listenPort": port, **server}.items()))
    ns = Proc("namesrv", [sys.executable, "-m", "pyrocketmq", "namesrv", "-c", str(conf)],
              tmp / "logs" / "namesrv.log", port).start()
    broker = start_broker(
        tmp, ns.addr, **server, **{"tls.enable": "true", "tls.client.trustCertPath": certs.ca}
    )
    try:
        yield ns, broker, certs
    finally:
        broker.stop()
        ns.stop()
