"""Throw-away certificates for TLS tests, written as PEM files: a CA, a server certificate for
127.0.0.1/localhost and a client certificate (:func:`make_certs`), and a clients' CA with a
certificate per user (:func:`make_user_certs`). Issued as the operator issues its own
(:mod:`pyrocketmq.operator.certs`)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from pyrocketmq.operator import certs

DAYS = 2


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    """A CA that signed neither: trusting only it must fail."""


@dataclass(frozen=True)
class UserCerts:
    ca: Path
    """The clients' CA: the certificates it issues name users."""
    certs: dict[str, tuple[Path, Path]]
    """user name → (certificate, key)."""


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)


def _write(folder: Path, name: str, pair: tuple[str, str]) -> tuple[Path, Path]:
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    cert.write_text(pair[0])
    key.write_text(pair[1])
    return cert, key


def make_certs(folder: Path) -> Certs:
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = certs.new_ca("pyrocketmq test CA", _now(), DAYS + 1)
    (folder / "ca.pem").write_text(ca)
    (folder / "other-ca.pem").write_text(certs.new_ca("some other CA", _now(), DAYS + 1)[0])
    server = _write(folder, "server", certs.issue(ca, ca_key, "localhost", ["localhost"], _now(), DAYS + 1,
                                                  ips=["127.0.0.1"]))  # fmt: skip
    client = _write(folder, "client", certs.issue(ca, ca_key, "client", [], _now(), DAYS + 1))
    return Certs(folder / "ca.pem", *server, *client, folder / "other-ca.pem")


def make_user_certs(folder: Path, names: list[str], ca_name: str = "pyrocketmq test clients CA") -> UserCerts:
    """A clients' CA under ``folder`` and a client certificate (common name = the user) per name."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = certs.new_ca(ca_name, _now(), DAYS + 1)
    path = folder / "clients-ca.pem"
    path.write_text(ca)
    issued = {n: _write(folder, n, certs.issue(ca, ca_key, n, [], _now(), DAYS + 1)) for n in names}
    return UserCerts(path, issued)
