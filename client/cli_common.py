"""What the client commands share: usage errors, argument types, tables and value formatting."""

from __future__ import annotations

import argparse
import datetime
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

import orjson

from pyrocketmq.remoting.tls import ClientTls

from .errors import MQClientError
from .message import SendResult
from .settings import ClientSettings

PROG = "pyrocketmq"


class UsageError(Exception):
    """Bad command-line arguments; ``parser`` prints the usage that goes with it."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so ``main`` decides the output and the status."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


def table(rows: Sequence[Sequence[object]], widths: Sequence[int], out: TextIO) -> None:
    """Left-aligned columns, at least mqadmin's widths, wider when a value needs it; two spaces apart."""
    cols = [max(w, *(len(str(r[i])) for r in rows)) if rows else w for i, w in enumerate(widths)]
    for r in rows:
        cells = [str(v).ljust(cols[i]) if i < len(r) - 1 else str(v) for i, v in enumerate(r)]
        out.write("  ".join(cells).rstrip() + "\n")


def fmt_ms(ms: int) -> str:
    if not ms or ms <= 0:
        return "N/A"
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def send_result_line(r: SendResult) -> str:
    mq = r.message_queue
    return (
        f"SendResult [sendStatus={r.status.value}, msgId={r.msg_id}, offsetMsgId={r.offset_msg_id}, "
        f"messageQueue=MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}], "
        f"queueOffset={r.queue_offset}]"
    )


def body_text(body: bytes, limit: int | None = None) -> str:
    text = body.decode("utf-8", "backslashreplace")
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"… ({len(body)} bytes)"
    return text


def to_jsonable(obj: Any) -> Any:
    """Dataclasses from ``remoting.body`` back to their Java-named JSON (for topicRoute)."""
    to_json = getattr(obj, "to_json", None)
    if to_json is not None:
        return orjson.loads(to_json())
    return obj


def _add_ns(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namesrvAddr", dest="namesrv", required=True, metavar="ADDR",
                   help="name server address list, e.g. 127.0.0.1:9876;192.168.0.1:9876")
    sec = p.add_argument_group("TLS and ACL")
    sec.add_argument("--tls", action="store_true", help="connect over TLS")
    sec.add_argument(
        "--tlsTrustCert", dest="tls_ca", metavar="PEM", help="CA the servers' certificates chain to"
    )
    sec.add_argument("--tlsInsecure", dest="tls_insecure", action="store_true",
                     help="trust any server certificate (Apache's test mode)")
    sec.add_argument("--tlsCert", dest="tls_cert", metavar="PEM",
                     help="client certificate to present (a user of the servers' certificate users)")
    sec.add_argument("--tlsKey", dest="tls_key", metavar="PEM", help="the client certificate's key")
    sec.add_argument(
        "--accessKey",
        "--access-key",
        dest="access_key",
        metavar="AK",
        help="ACL account (default: PYROCKETMQ_ACCESS_KEY); the secret key comes from --secretKey or "
        "PYROCKETMQ_SECRET_KEY",
    )
    sec.add_argument("--secretKey", "--secret-key", dest="secret_key", metavar="SK", help=argparse.SUPPRESS)


def client_settings(args: argparse.Namespace) -> ClientSettings:
    """The client settings the security options ask for (name servers are passed separately)."""
    cert, key = getattr(args, "tls_cert", None) or "", getattr(args, "tls_key", None) or ""
    if bool(cert) != bool(key):
        raise MQClientError("--tlsCert and --tlsKey go together: give both")
    tls = (
        getattr(args, "tls", False)
        or bool(getattr(args, "tls_ca", None))
        or getattr(args, "tls_insecure", False)
        or bool(cert)
    )
    access_key = getattr(args, "access_key", None) or os.environ.get("PYROCKETMQ_ACCESS_KEY", "")
    secret_key = getattr(args, "secret_key", None) or os.environ.get("PYROCKETMQ_SECRET_KEY", "")
    if access_key and not secret_key:
        raise MQClientError("--accessKey needs a secret key: give --secretKey or set PYROCKETMQ_SECRET_KEY")
    # as Apache's clients: the chain to the trusted CA is checked, not the host name (brokers are
    # reached by the addresses they register, which their certificates rarely name)
    return ClientSettings(
        namesrv_addr=args.namesrv,
        tls=ClientTls(enabled=tls, trust_cert_path=getattr(args, "tls_ca", None) or "",
                      verify=not getattr(args, "tls_insecure", False), check_hostname=False,
                      cert_path=cert, key_path=key),
        access_key=access_key, secret_key=secret_key,
    )


def _bool(text: str) -> bool:
    v = text.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _timestamp(text: str) -> int:
    """mqadmin's ``-s``: ``now``, ms since the epoch (``-1``: the end), or ``yyyy-MM-dd#HH:mm:ss:SSS``."""
    v = text.strip()
    if v.lower() == "now":
        return int(time.time() * 1000)
    if v.lstrip("-").isdigit():
        return int(v)
    try:
        return int(datetime.datetime.strptime(v, "%Y-%m-%d#%H:%M:%S:%f").timestamp() * 1000)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected now, milliseconds or yyyy-MM-dd#HH:mm:ss:SSS, got {text!r}"
        ) from None


def int_range(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argument type: an integer from ``lo`` to ``hi`` (no upper bound when ``hi`` is None)."""

    def parse(text: str) -> int:
        value = int(text)  # a ValueError reads "invalid int value: 'x'", as for type=int
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(
                f"must be at least {lo}" if hi is None else f"must be {lo}..{hi}"
            )
        return value

    parse.__name__ = "int"
    return parse


def charset(text: str) -> str:
    """An argument type: the name of a codec Python knows (``UTF-8``, ``GBK``, ``latin-1``…)."""
    try:
        "".encode(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"not a charset: {text!r}") from None
    return text
