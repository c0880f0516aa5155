"""ACL 2.0 administration (Apache 5.3's ``DefaultMQAdminExt`` user and ACL calls): users and their
ACLs on one broker, or on every master of a cluster (mqadmin's ``-b``/``-c``). The broker answers
only a super user while its authentication is on: sign with one (``ClientSettings(access_key=...,
secret_key=...)``, the user's name and password).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from pyrocketmq.remoting.auth_header import AclInfo, PolicyEntryInfo, UserInfo, decode_list
from pyrocketmq.remoting.code import RequestCode

from .admin_base import AdminBase


class AdminAuth(AdminBase):
    """Example::

        async with Admin("127.0.0.1:9876", client=ClientSettings(access_key="root", secret_key="...")) as a:
            await a.create_user("alice", "alice-password", cluster="DefaultCluster")
            await a.create_acl("User:alice", ["Topic:orders"], ["Pub"], "Allow", cluster="DefaultCluster")
    """

    async def _each(self, broker_addr: str | None, cluster: str | None, code: int, fields: dict[str, Any],
                    body: object = None) -> list[str]:
        raw = None if body is None else orjson.dumps(body)
        targets = await self.target_brokers(broker_addr, cluster)
        for addr in targets:
            await self._broker(addr, code, fields, raw)
        return targets

    async def _one(self, broker_addr: str | None, cluster: str | None, code: int,
                   fields: dict[str, Any]) -> bytes:
        addr = (await self.target_brokers(broker_addr, cluster))[0]
        return bytes((await self._broker(addr, code, fields)).payload)

    # -- users ------------------------------------------------------------------------------------
    async def create_user(self, username: str, password: str, user_type: str | None = None, *,
                          broker_addr: str | None = None, cluster: str | None = None) -> list[str]:
        """Create a user (type ``Normal`` unless ``Super``); returns the brokers that took it."""
        info: UserInfo = {"username": username, "password": password}
        if user_type:
            info["userType"] = user_type
        return await self._each(broker_addr, cluster, RequestCode.AUTH_CREATE_USER, {"username": username},
                                info)

    async def update_user(self, username: str, password: str | None = None, user_type: str | None = None,
                          user_status: str | None = None, *, broker_addr: str | None = None,
                          cluster: str | None = None) -> list[str]:
        """Change what is given of a user (its password, type or status ``enable``/``disable``)."""
        info: UserInfo = {"username": username}
        if password:
            info["password"] = password
        if user_type:
            info["userType"] = user_type
        if user_status:
            info["userStatus"] = user_status
        return await self._each(broker_addr, cluster, RequestCode.AUTH_UPDATE_USER, {"username": username},
                                info)

    async def delete_user(self, username: str, *, broker_addr: str | None = None,
                          cluster: str | None = None) -> list[str]:
        return await self._each(broker_addr, cluster, RequestCode.AUTH_DELETE_USER, {"username": username})

    async def get_user(self, username: str, *, broker_addr: str | None = None,
                       cluster: str | None = None) -> dict[str, Any] | None:
        """The user as UserInfo (from the first broker), None when there is no such user."""
        raw = await self._one(broker_addr, cluster, RequestCode.AUTH_GET_USER, {"username": username})
        return orjson.loads(raw) if raw else None

    async def list_users(self, name_filter: str | None = None, *, broker_addr: str | None = None,
                         cluster: str | None = None) -> list[dict[str, Any]]:
        fields = {"filter": name_filter} if name_filter else {}
        return decode_list(await self._one(broker_addr, cluster, RequestCode.AUTH_LIST_USER, fields))

    # -- ACLs -------------------------------------------------------------------------------------
    async def create_acl(self, subject: str, resources: list[str], actions: list[str], decision: str,
                         source_ips: list[str] | None = None, *, broker_addr: str | None = None,
                         cluster: str | None = None, update: bool = False) -> list[str]:
        """Give ``subject`` (``User:<name>``) one entry per resource with these actions, source IPs
        and decision (``Allow``/``Deny``), merged into its ACL (``update``: as AUTH_UPDATE_ACL)."""
        entries: list[PolicyEntryInfo] = [
            {"resource": r, "actions": list(actions), "sourceIps": list(source_ips or []),
             "decision": decision} for r in resources
        ]
        info: AclInfo = {"subject": subject, "policies": [{"policyType": "Custom", "entries": entries}]}
        return await self.put_acl(info, broker_addr=broker_addr, cluster=cluster, update=update)

    async def put_acl(self, info: Mapping[str, Any], *, broker_addr: str | None = None,
                      cluster: str | None = None, update: bool = False) -> list[str]:
        """Merge a whole AclInfo body (its policies and entries) into its subject's ACL."""
        code = RequestCode.AUTH_UPDATE_ACL if update else RequestCode.AUTH_CREATE_ACL
        return await self._each(broker_addr, cluster, code, {"subject": info["subject"]}, info)

    async def update_acl(self, subject: str, resources: list[str], actions: list[str], decision: str,
                         source_ips: list[str] | None = None, *, broker_addr: str | None = None,
                         cluster: str | None = None) -> list[str]:
        return await self.create_acl(subject, resources, actions, decision, source_ips,
                                     broker_addr=broker_addr, cluster=cluster, update=True)

    async def delete_acl(self, subject: str, resource: str | None = None, *, broker_addr: str | None = None,
                         cluster: str | None = None) -> list[str]:
        """The subject's whole ACL, or only one resource's entry (its key, ``Topic:orders``)."""
        fields = {"subject": subject, **({"resource": resource} if resource else {})}
        return await self._each(broker_addr, cluster, RequestCode.AUTH_DELETE_ACL, fields)

    async def get_acl(self, subject: str, *, broker_addr: str | None = None,
                      cluster: str | None = None) -> dict[str, Any] | None:
        raw = await self._one(broker_addr, cluster, RequestCode.AUTH_GET_ACL, {"subject": subject})
        return orjson.loads(raw) if raw else None

    async def list_acls(self, subject_filter: str | None = None, resource_filter: str | None = None, *,
                        broker_addr: str | None = None, cluster: str | None = None) -> list[dict[str, Any]]:
        fields = {k: v for k, v in (("subjectFilter", subject_filter), ("resourceFilter", resource_filter))
                  if v}
        return decode_list(await self._one(broker_addr, cluster, RequestCode.AUTH_LIST_ACL, fields))

    # -- quotas (pyrocketmq's own: per-user limits, :mod:`pyrocketmq.broker.quota`) ---------------
    async def set_user_quota(self, username: str, *, produced_bytes_per_second: float | None = None,
                             consumed_bytes_per_second: float | None = None,
                             requests_per_second: float | None = None, broker_addr: str | None = None,
                             cluster: str | None = None) -> list[str]:
        """Set the limits given of ``username`` (per second; 0 removes one, those not given stay);
        returns the brokers that took it."""
        limits = {"producedBytesPerSecond": produced_bytes_per_second,
                  "consumedBytesPerSecond": consumed_bytes_per_second,
                  "requestsPerSecond": requests_per_second}
        body = {"username": username, **{k: v for k, v in limits.items() if v is not None}}
        return await self._each(broker_addr, cluster, RequestCode.UPDATE_USER_QUOTA, {}, body)

    async def get_user_quota(self, username: str, *, broker_addr: str | None = None,
                             cluster: str | None = None) -> dict[str, Any] | None:
        """The user's quota (from the first broker), None when it has none."""
        addr = (await self.target_brokers(broker_addr, cluster))[0]
        resp = await self._broker(addr, RequestCode.GET_USER_QUOTA, {}, orjson.dumps({"username": username}))
        return orjson.loads(resp.payload) if resp.payload else None

    async def delete_user_quota(self, username: str, *, broker_addr: str | None = None,
                                cluster: str | None = None) -> list[str]:
        return await self._each(broker_addr, cluster, RequestCode.DELETE_USER_QUOTA, {},
                                {"username": username})

    async def list_user_quotas(self, *, broker_addr: str | None = None,
                               cluster: str | None = None) -> list[dict[str, Any]]:
        raw = await self._one(broker_addr, cluster, RequestCode.LIST_USER_QUOTA, {})
        return list(orjson.loads(raw)) if raw else []
