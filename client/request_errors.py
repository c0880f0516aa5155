"""What a failed request means to the client: a transport failure or an error answer turned into
the typed client error that says it in one line.

- :func:`transport_error`: :class:`~.errors.MQTimeoutError` for a request that timed out,
  :class:`~.errors.MQConnectionError` naming the peer and the short cause (``connection
  refused``, ``unknown host`` …) for one that could not reach it;
- :func:`check_response`: the answer when its code says success, else the
  :class:`~.errors.MQBrokerError` for its code.
"""

from __future__ import annotations

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import RemotingError, RemotingTimeoutError

from .errors import MQBrokerError, MQConnectionError, MQTimeoutError


def transport_error(e: RemotingError, addr: str, what: str = "broker") -> Exception:
    """The client error for a transport failure talking to ``addr`` (a one-line message)."""
    if isinstance(e, RemotingTimeoutError):
        return MQTimeoutError(str(e))
    return MQConnectionError(f"cannot reach {what} {addr}: {_reason(e)}")


def check_response(resp: RemotingCommand, addr: str, *ok: int) -> RemotingCommand:
    """``resp`` when its code is SUCCESS (or one of ``ok``); else the matching
    :class:`MQBrokerError`."""
    if resp.code == ResponseCode.SUCCESS or resp.code in ok:
        return resp
    raise MQBrokerError.for_code(resp.code, resp.remark, addr)


def _reason(e: Exception) -> str:
    """The short cause of a connection error (``connection refused``) for one-line messages."""
    text = str(e)
    for marker in ("Connect call failed", "Errno 111", "Connection refused"):
        if marker in text:
            return "connection refused"
    if "timed out" in text.lower() or "TimeoutError" in text:
        return "connection timed out"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    if text.startswith("cannot connect to "):
        return text.split(": ", 1)[-1]
    if text.startswith("connection to ") and " closed: " in text:
        return "connection closed (" + text.split(" closed: ", 1)[1] + ")"
    return text
