"""Fuzz targets: each takes bytes and fails only on a bug.

- :func:`frames`: raw bytes, cut at chosen points, into the frame decoder. A malformed frame is a
  :class:`FrameError`; anything else escaping is a bug.
- :func:`messages`: the stored-message decoder (records, batch bodies, properties).
- :func:`broker` / :func:`namesrv`: the bytes become one request (a code the server serves, header
  fields from the names its headers use with values from the bytes or from the edges of Java's
  number types, and a body) fed to a server-side :class:`Connection` wired to every processor on a
  temporary store (broker) or to the name server's processor. A handler that raises, or data that
  makes the connection log an internal error, is a bug: a hostile client must get an answer or a
  closed connection, never a failure inside the server.
- :func:`acl`: the same kind of broker request, signed by an account, judged by the broker's ACL
  (:mod:`pyrocketmq.server.acl_table` decodes it as its handler would): the verdict is a reason or
  a pass; an exception escaping is a bug.

Run them with atheris (``python -m tests.fuzz.run TARGET``, see ``scripts/fuzz``) or replay a
corpus (``tests/fuzz/test_fuzz.py`` does in CI).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import fields

from pyrocketmq.remoting import header as headers, namesrv_header
from pyrocketmq.remoting.command import FrameDecoder, FrameError, RemotingCommand, encode
from pyrocketmq.remoting.transport import Connection
from pyrocketmq.server.acl import AclValidator, parse_plain_acl
from tests.helpers.transport import FakeTransport

EDGE_VALUES = (
    "",
    "0",
    "-1",
    "1",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "1e309",
    "NaN",
    "true",
    "null",
    "%RETRY%g",
    "../..",
    "TBW102",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "SCHEDULE_TOPIC_XXXX",
    "T",
    "g",
    "DefaultCluster",
    "broker-a",
    "x" * 300,
    "\u00e9\u0000",
)


def _field_names() -> list[str]:
    names: set[str] = {
        "topic",
        "consumerGroup",
        "producerGroup",
        "group",
        "groupName",
        "queueId",
        "offset",
        "key",
        "namespace",
        "value",
        "brokerName",
        "clusterName",
        "brokerAddr",
        "brokerId",
        "clientID",
    }
    for cls in [*vars(headers).values(), *vars(namesrv_header).values()]:
        if isinstance(cls, type) and issubclass(cls, headers.Header) and cls is not headers.Header:
            for f in fields(cls):
                names.add(f.metadata.get("java") or headers._camel(f.name))
    names.update("abcdefghijklmn")  # SEND_MESSAGE_V2's keys
    names.update({"bname", "removeOffset", "_UNIQUE_KEY_QUERY"})  # what clients add beside the headers
    return sorted(names)


FIELD_NAMES = _field_names()


def frames(data: bytes) -> None:
    """Raw bytes into the decoder, cut where the first byte says."""
    decoder = FrameDecoder()
    step = (data[0] if data else 1) or 1
    try:
        for i in range(0, len(data), step):
            for cmd in decoder.feed(data[i : i + step]):
                encode(cmd)  # a decoded command must encode again
    except FrameError:
        pass


def messages(data: bytes) -> None:
    """Stored records (a pull or query body), batch bodies and property strings from arbitrary
    bytes: a malformed one is a ``ValueError`` (MessageDecodeError), nothing else."""
    from pyrocketmq.remoting.batch import decode_batch
    from pyrocketmq.remoting.message import decode_properties, iter_messages

    for decode in (lambda b: list(iter_messages(b)), decode_batch, decode_properties):
        try:
            decode(data)
        except ValueError:
            pass


def request_from(data: bytes, codes: list[int]) -> RemotingCommand:
    """One request from fuzz bytes: [code choice][field count] then (name choice, value) pairs, then the
    body."""
    if len(data) < 2:
        data = data + b"\x00\x00"
    code = codes[data[0] % len(codes)]
    n, pos, ext = data[1] % 12, 2, {}
    for _ in range(n):
        if pos + 2 > len(data):
            break
        name = FIELD_NAMES[data[pos] % len(FIELD_NAMES)]
        choice = data[pos + 1]
        pos += 2
        if choice < 128:
            ext[name] = EDGE_VALUES[choice % len(EDGE_VALUES)]
        else:
            size = choice - 128
            ext[name] = data[pos : pos + size].decode("utf-8", "replace")
            pos += size
    body = data[pos:] or None
    return RemotingCommand.request(code, ext, body)


class _Failures(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def _call(fn: Callable[[], dict[int, Callable]]) -> dict[int, Callable]:
    return fn()  # on the loop: handlers may look for the running loop when made


class Server:
    """Handlers of one server kind on a private loop; :meth:`feed` runs one request through them."""

    def __init__(self, make_handlers: Callable[[], dict[int, Callable]]) -> None:
        self.loop = asyncio.new_event_loop()
        self.handlers = self.loop.run_until_complete(_call(make_handlers))
        self.codes = sorted(self.handlers)
        self.failures = _Failures()

    def feed(self, data: bytes) -> None:
        cmd = request_from(data, self.codes)
        self.failures.records.clear()

        async def go() -> None:
            conn = Connection(self.handlers, name="fuzz", serving=True)
            conn.connection_made(FakeTransport())  # type: ignore[arg-type]
            conn.data_received(encode(cmd))
            for _ in range(3):
                await asyncio.sleep(0)
            conn.connection_lost(None)
            for _ in range(3):
                await asyncio.sleep(0)

        logger = logging.getLogger("pyrocketmq")
        logger.addHandler(self.failures)
        try:
            self.loop.run_until_complete(go())
        finally:
            logger.removeHandler(self.failures)
        if self.failures.records:
            r = self.failures.records[0]
            raise AssertionError(
                f"code {cmd.code} ext {cmd.ext_fields} body {cmd.body!r:.200}: "
                f"{r.getMessage()}\n{logging.Formatter().formatException(r.exc_info) if r.exc_info else ''}"
            )


def _broker_handlers() -> dict[int, Callable]:
    from pyrocketmq.broker.processors.admin import AdminProcessor
    from pyrocketmq.broker.processors.client import ClientProcessor
    from pyrocketmq.broker.processors.consumer import ConsumerProcessor
    from pyrocketmq.broker.processors.offset import OffsetProcessor
    from pyrocketmq.broker.processors.pull import PullProcessor
    from pyrocketmq.broker.processors.query import QueryProcessor
    from pyrocketmq.broker.processors.replication import ReplicationProcessor
    from pyrocketmq.broker.processors.send import SendProcessor
    from pyrocketmq.broker.processors.send_back import SendBackProcessor
    from pyrocketmq.broker.processors.tools import ToolsProcessor
    from pyrocketmq.broker.processors.transaction import TransactionProcessor
    from tests.unit.broker.processors.conftest import build

    root = tempfile.mkdtemp(prefix="pyrocketmq-fuzz-")
    services = build(root, enablePropertyFilter="true")
    services.create_topic("T", queues=2)
    services.groups.find("g")

    def close() -> None:
        services.store.shutdown()
        shutil.rmtree(root, ignore_errors=True)

    atexit.register(close)
    handlers: dict[int, Callable] = {}
    registry = type(
        "Registry", (), {"register": lambda self, code, fn: handlers.__setitem__(int(code), fn)}
    )()
    for cls in (
        SendProcessor,
        SendBackProcessor,
        PullProcessor,
        OffsetProcessor,
        ClientProcessor,
        ConsumerProcessor,
        AdminProcessor,
        QueryProcessor,
        TransactionProcessor,
        ReplicationProcessor,
        ToolsProcessor,
    ):
        extra = {"property_filter": True} if cls is ClientProcessor else {}
        services.make(cls, **extra).register(registry)
    return handlers


def _namesrv_handlers() -> dict[int, Callable]:
    from pyrocketmq.namesrv.kv_config import KVConfigManager
    from pyrocketmq.namesrv.processor import NamesrvProcessor
    from pyrocketmq.namesrv.route_info import RouteInfoManager

    return NamesrvProcessor(RouteInfoManager(), KVConfigManager(None)).handlers()


_servers: dict[str, Server] = {}


def broker(data: bytes) -> None:
    if "broker" not in _servers:
        _servers["broker"] = Server(_broker_handlers)
    _servers["broker"].feed(data)


def namesrv(data: bytes) -> None:
    if "namesrv" not in _servers:
        _servers["namesrv"] = Server(_namesrv_handlers)
    _servers["namesrv"].feed(data)


ACL_ACCOUNT = ("fuzzer01", "fuzzer-secret")
"""The account the :func:`acl` target signs with: rights on topic T and groups g and p only."""


def acl_codes() -> list[int]:
    from pyrocketmq.server.acl_table import BROKER_RULES

    return sorted(BROKER_RULES)


@functools.cache
def _acl_validator() -> AclValidator:

    ak, sk = ACL_ACCOUNT
    return AclValidator(parse_plain_acl({"accounts": [
        {"accessKey": ak, "secretKey": sk, "defaultTopicPerm": "DENY", "defaultGroupPerm": "DENY",
         "topicPerms": ["T=PUB|SUB"], "groupPerms": ["g=SUB", "p=PUB"]}]}))


def acl(data: bytes) -> None:
    from pyrocketmq.remoting.acl_sign import sign

    cmd = request_from(data, acl_codes())
    sign(cmd, *ACL_ACCOUNT)
    account, why = _acl_validator().admit(cmd, "127.0.0.1")
    assert (account is None) != (why is None), (account, why)


TARGETS: dict[str, Callable[[bytes], None]] = {"frames": frames, "messages": messages, "broker": broker,
                                               "namesrv": namesrv, "acl": acl}
