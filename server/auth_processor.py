"""ACL 2.0 administration: the ten AUTH_* requests (3001-3010, :mod:`pyrocketmq.remoting.auth_header`)
over a server's users and ACLs (:class:`~.auth_metadata.AuthMetadata`); the broker and the name
server each serve them over their own.

Only a super user may send them while authentication is on (with it off, anyone may, as the
server knows no caller). A body that does not parse, or a user or ACL that is not well formed,
is answered INVALID_PARAMETER with what is wrong; what the stored users and ACLs refuse (a user
that exists already, an ACL for an unknown user...) NO_PERMISSION with Apache's words, as Apache 5.3
answers. Gets and lists answer an empty body when there is nothing to show.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson

from pyrocketmq.remoting.auth_header import (
    AclRequestHeader,
    DeleteAclRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UserRequestHeader,
    decode_object,
)
from pyrocketmq.remoting.code import RequestCode as C, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import HeaderError
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult

from .acl2 import (
    AuthError,
    PolicyType,
    Resource,
    User,
    acl_from_info,
    acl_to_info,
    by_name,
    subject_user,
    user_from_info,
    user_to_info,
    user_updated,
)
from .auth_metadata import AuthMetadata

log = logging.getLogger("pyrocketmq.auth")


class BadRequest(ValueError):
    """The request does not say what to do in a usable form (INVALID_PARAMETER)."""


_HANDLERS = {
    C.AUTH_CREATE_USER: "create_user", C.AUTH_UPDATE_USER: "update_user", C.AUTH_DELETE_USER: "delete_user",
    C.AUTH_GET_USER: "get_user", C.AUTH_LIST_USER: "list_users", C.AUTH_CREATE_ACL: "put_acl",
    C.AUTH_UPDATE_ACL: "put_acl", C.AUTH_DELETE_ACL: "delete_acl", C.AUTH_GET_ACL: "get_acl",
    C.AUTH_LIST_ACL: "list_acls",
}


class AuthProcessor:
    """Example: ``AuthProcessor(meta=meta, super_caller=access.is_super_caller).register(server)``
    (no ``super_caller``: ACL 2.0 is not enforced and anyone may)."""

    def __init__(self, *, meta: AuthMetadata,
                 super_caller: Callable[[Connection], bool] | None = None) -> None:
        self.meta = meta
        self.super_caller = super_caller or _anyone

    def register(self, server: HandlerRegistry) -> None:
        for code in _HANDLERS:
            server.register(code, self.handle)

    def handle(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        if not self.super_caller(conn):
            return cmd.response(ResponseCode.NO_PERMISSION,
                                "only a super user may manage users and ACLs (request code "
                                f"{cmd.code})")
        run: Callable[[RemotingCommand], bytes | None] = getattr(self, _HANDLERS[C(cmd.code)])
        try:
            body = run(cmd)
        except (BadRequest, HeaderError) as e:
            return cmd.response(ResponseCode.INVALID_PARAMETER, str(e))
        except AuthError as e:
            return cmd.response(ResponseCode.NO_PERMISSION, str(e))
        return cmd.response(ResponseCode.SUCCESS, body=body)

    # -- users ------------------------------------------------------------------------------------
    def create_user(self, cmd: RemotingCommand) -> None:
        name = _username(cmd)
        user = _parsed(user_from_info, {**_body(cmd, "UserInfo"), "username": name})
        self.meta.create_user(user)
        log.info("ACL 2.0: user %s created (%s)", name, user.user_type.value)

    def update_user(self, cmd: RemotingCommand) -> None:
        name = _username(cmd)
        info = _body(cmd, "UserInfo")
        _parsed(user_updated, User(name), info)  # well formed before it is looked up
        self.meta.update_user(name, info)
        log.info("ACL 2.0: user %s updated", name)

    def delete_user(self, cmd: RemotingCommand) -> None:
        name = _username(cmd)
        self.meta.delete_user(name)
        log.info("ACL 2.0: user %s and its ACL deleted", name)

    def get_user(self, cmd: RemotingCommand) -> bytes | None:
        user = self.meta.user(_username(cmd))
        return None if user is None else orjson.dumps(user_to_info(user))

    def list_users(self, cmd: RemotingCommand) -> bytes | None:
        users = self.meta.list_users(ListUsersRequestHeader.from_command(cmd).filter)
        return orjson.dumps([user_to_info(u) for u in users]) if users else None

    # -- ACLs -------------------------------------------------------------------------------------
    def put_acl(self, cmd: RemotingCommand) -> None:
        """AUTH_CREATE_ACL and AUTH_UPDATE_ACL alike (Apache merges both into the user's ACL)."""
        subject = AclRequestHeader.from_command(cmd).subject
        info = _body(cmd, "AclInfo")
        acl = _parsed(acl_from_info, info, subject)
        name = acl.subject.partition(":")[2]
        self.meta.put_acl(name, acl)
        log.info("ACL 2.0: ACL of %s updated", acl.subject)

    def delete_acl(self, cmd: RemotingCommand) -> None:
        h = DeleteAclRequestHeader.from_command(cmd)
        name = _parsed(subject_user, h.subject)
        policy_type = by_name(PolicyType, h.policy_type) if h.policy_type else PolicyType.CUSTOM
        if policy_type is None:
            raise BadRequest(f"policyType {h.policy_type!r:.40} is not Custom or Default")
        resource = _parsed(Resource.parse, h.resource) if h.resource else None
        self.meta.delete_acl(name, policy_type, resource)
        log.info("ACL 2.0: %s of User:%s deleted", resource.key if resource else "the ACL", name)

    def get_acl(self, cmd: RemotingCommand) -> bytes | None:
        acl = self.meta.get_acl(_parsed(subject_user, AclRequestHeader.from_command(cmd).subject))
        return None if acl is None else orjson.dumps(acl_to_info(acl))

    def list_acls(self, cmd: RemotingCommand) -> bytes | None:
        h = ListAclsRequestHeader.from_command(cmd)
        acls = self.meta.list_acls(h.subject_filter, h.resource_filter)
        return orjson.dumps([acl_to_info(a) for a in acls]) if acls else None


def _anyone(conn: Connection) -> bool:
    return True


def _username(cmd: RemotingCommand) -> str:
    name = (UserRequestHeader.from_command(cmd).username or "").strip()
    if not name:
        raise BadRequest("The username is blank")
    return name


def _body(cmd: RemotingCommand, what: str) -> dict[str, Any]:
    try:
        return decode_object(cmd.payload, what)
    except ValueError as e:
        raise BadRequest(str(e)) from None


def _parsed(parse: Callable[..., Any], *args: Any) -> Any:
    """``parse(*args)``, its AuthError (the input is not well formed) as a BadRequest."""
    try:
        return parse(*args)
    except AuthError as e:
        raise BadRequest(str(e)) from None
