"""A small asyncio client of the Kubernetes API: just what the operator does.

kopf watches and dispatches; this client does the operator's own calls over aiohttp with the
credentials kopf logged in with (:class:`kopf.ConnectionInfo`, duck-typed here so this module stays
free of kopf): server-side apply, list by label, delete, status patches. The resource paths of the
few kinds the operator touches are a static table: no discovery round-trips.

A 401 re-runs the login (service-account tokens rotate) and retries the request once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import aiohttp

log = logging.getLogger("pyrocketmq.operator")


class ConnectionInfoLike(Protocol):
    @property
    def server(self) -> str: ...  # read-only: kopf's ConnectionInfo is a frozen dataclass

    def as_ssl_context(self) -> Any: ...

    def as_http_headers(self) -> dict[str, str]: ...


@dataclass(frozen=True, slots=True)
class ResourceKind:
    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    def path(self, namespace: str | None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace)}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name)}"
        if subresource:
            base += f"/{subresource}"
        return base


_KINDS = [
    ResourceKind("v1", "ServiceAccount", "serviceaccounts"),
    ResourceKind("v1", "ConfigMap", "configmaps"),
    ResourceKind("v1", "Secret", "secrets"),
    ResourceKind("v1", "Service", "services"),
    ResourceKind("v1", "Pod", "pods"),
    ResourceKind("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ResourceKind("v1", "Node", "nodes", namespaced=False),
    ResourceKind("apps/v1", "StatefulSet", "statefulsets"),
    ResourceKind("apps/v1", "Deployment", "deployments"),
    ResourceKind("apps/v1", "ReplicaSet", "replicasets"),
    ResourceKind("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
    ResourceKind("pyrocketmq.io/v1alpha1", "NameServer", "nameservers"),
    ResourceKind("pyrocketmq.io/v1alpha1", "Broker", "brokers"),
    ResourceKind("pyrocketmq.io/v1alpha1", "Topic", "topics"),
    ResourceKind("pyrocketmq.io/v1alpha1", "ConsumerGroup", "consumergroups"),
]
KINDS: dict[tuple[str, str], ResourceKind] = {(k.api_version, k.kind): k for k in _KINDS}


def kind_of(api_version: str, kind: str) -> ResourceKind:
    try:
        return KINDS[(api_version, kind)]
    except KeyError:
        raise ValueError(f"the operator does not manage {api_version} {kind}") from None


class KubeError(Exception):
    """A failed API call; ``status`` is the HTTP status, ``reason`` the Status reason (NotFound …)."""

    def __init__(self, status: int, reason: str, message: str, method: str = "", path: str = "") -> None:
        super().__init__(f"{method} {path}: {status} {reason}: {message}".strip())
        self.status, self.reason, self.message = status, reason, message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def invalid(self) -> bool:
        return self.status == 422


def label_selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


class KubeClient:
    """Example::

        kube = KubeClient(lambda: kopf.login_with_kubeconfig(settings=kopf.OperatorSettings()))
        created, sts = await kube.apply(statefulset, field_manager="pyrocketmq-operator")
        await kube.close()
    """

    def __init__(self, login: Callable[[], ConnectionInfoLike | None], timeout: float = 30.0) -> None:
        self._login = login
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._server = ""
        self._shut = False

    def _connect(self) -> aiohttp.ClientSession:
        info = self._login()
        if info is None:
            raise KubeError(0, "NoCredentials", "no kubeconfig and not in a pod: cannot reach the API server")
        self._server = info.server.rstrip("/")
        headers = {**info.as_http_headers(), "User-Agent": "pyrocketmq-operator"}
        connector = aiohttp.TCPConnector(ssl=info.as_ssl_context(), limit=32)
        return aiohttp.ClientSession(connector=connector, headers=headers, timeout=self._timeout)

    async def close(self, *, final: bool = True) -> None:
        """Close the connections; after a ``final`` close every request fails (operator shutdown)."""
        self._shut = self._shut or final
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, dict[str, Any]]:
        """One call; a non-2xx answer raises :class:`KubeError`. Returns ``(status, parsed body)``."""
        for attempt in (0, 1):
            if self._shut:
                raise KubeError(0, "Unreachable", "the operator is shutting down", method, path)
            if self._session is None or self._session.closed:
                self._session = self._connect()
            data = None if body is None else json.dumps(body)
            headers = {"Content-Type": content_type} if body is not None else {}
            try:
                async with self._session.request(
                    method, self._server + path, params=params, data=data, headers=headers
                ) as resp:
                    status, reason, text = resp.status, resp.reason, await resp.text()
            except (aiohttp.ClientError, TimeoutError) as e:
                raise KubeError(0, "Unreachable", f"{type(e).__name__}: {e}", method, path) from None
            if status == 401 and attempt == 0:
                log.info("the API server refused the credentials (401); logging in again")
                await self.close(final=False)
                continue
            try:
                doc = json.loads(text) if text else {}
            except ValueError:
                doc = {"message": text}
            if status >= 300:
                raise KubeError(status, str(doc.get("reason") or reason), str(doc.get("message") or text), method, path)
            return status, doc
        raise AssertionError("unreachable")

    # -- verbs ------------------------------------------------------------------------------------

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            _, doc = await self.request("GET", kind_of(api_version, kind).path(namespace, name))
        except KubeError as e:
            if e.not_found:
                return None
            raise
        return doc

    async def list(
        self, api_version: str, kind: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        params = {"labelSelector": label_selector(labels)} if labels else None
        _, doc = await self.request("GET", kind_of(api_version, kind).path(namespace), params=params)
        items = doc.get("items") or []
        for item in items:  # list items carry no apiVersion/kind
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    async def apply(self, obj: Mapping[str, Any], field_manager: str, force: bool = True) -> tuple[bool, dict[str, Any]]:
        """Server-side apply ``obj``; returns ``(created, the object as stored)``."""
        rk = kind_of(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        params = {"fieldManager": field_manager, "force": "true" if force else "false"}
        status, doc = await self.request(
            "PATCH",
            rk.path(meta.get("namespace"), meta["name"]),
            params=params,
            body=obj,
            content_type="application/apply-patch+yaml",  # JSON is YAML
        )
        return status == 201, doc

    async def delete(self, api_version: str, kind: str, namespace: str, name: str,
                     propagation: str = "Background", grace_period: int | None = None) -> bool:
        """Delete; ``False`` when it was already gone. ``grace_period=0`` removes a pod at once, as
        ``kubectl delete --force`` does (for a pod whose kubelet no longer answers)."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        try:
            await self.request("DELETE", kind_of(api_version, kind).path(namespace, name), body=body)
        except KubeError as e:
            if e.not_found:
                return False
            raise
        return True

    async def patch_labels(self, api_version: str, kind: str, namespace: str, name: str,
                           labels: Mapping[str, str | None]) -> dict[str, Any] | None:
        """Merge-patch ``metadata.labels`` (None removes one); ``None`` when the object is gone."""
        return await self._patch_metadata(api_version, kind, namespace, name, {"labels": dict(labels)})

    async def patch_annotations(self, api_version: str, kind: str, namespace: str, name: str,
                                annotations: Mapping[str, str | None]) -> dict[str, Any] | None:
        """Merge-patch ``metadata.annotations`` (None removes one); ``None`` when the object is gone."""
        return await self._patch_metadata(api_version, kind, namespace, name, {"annotations": dict(annotations)})

    async def _patch_metadata(self, api_version: str, kind: str, namespace: str, name: str,
                              metadata: Mapping[str, Any]) -> dict[str, Any] | None:
        try:
            _, doc = await self.request("PATCH", kind_of(api_version, kind).path(namespace, name),
                                        body={"metadata": dict(metadata)},
                                        content_type="application/merge-patch+json")  # fmt: skip
        except KubeError as e:
            if e.not_found:
                return None
            raise
        return doc

    async def patch_status(self, api_version: str, kind: str, namespace: str, name: str,
                           status: Mapping[str, Any]) -> dict[str, Any] | None:
        """Merge-patch the status subresource; ``None`` when the object is gone."""
        try:
            _, doc = await self.request(
                "PATCH",
                kind_of(api_version, kind).path(namespace, name, "status"),
                body={"status": status},
                content_type="application/merge-patch+json",
            )
        except KubeError as e:
            if e.not_found:
                return None
            raise
        return doc

    async def get_scale(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The ``scale`` subresource (``spec.replicas``, ``status.replicas``); ``None`` when gone."""
        try:
            _, doc = await self.request("GET", kind_of(api_version, kind).path(namespace, name, "scale"))
        except KubeError as e:
            if e.not_found:
                return None
            raise
        return doc

    async def set_scale(self, api_version: str, kind: str, namespace: str, name: str, replicas: int) -> dict[str, Any]:
        """Merge-patch ``spec.replicas`` through the ``scale`` subresource."""
        _, doc = await self.request(
            "PATCH",
            kind_of(api_version, kind).path(namespace, name, "scale"),
            body={"spec": {"replicas": replicas}},
            content_type="application/merge-patch+json",
        )
        return doc
