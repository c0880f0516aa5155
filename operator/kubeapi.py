"""The operator's calls to the API server, on the official asyncio Kubernetes client.

``kubernetes_asyncio`` (the asyncio twin of ``kubernetes``, generated from the same OpenAPI spec)
rather than ``kubernetes`` itself: the operator runs on kopf's event loop, and the synchronous client
would need a thread per call in flight (urllib3 blocks) for calls that are all short I/O waits.

What the operator does, as verbs on ``(apiVersion, kind)``: get, list by label, server-side apply,
delete, merge patches of labels, annotations and status, the ``scale`` subresource. They run on the
client's :class:`~kubernetes_asyncio.dynamic.DynamicClient`, so resource paths come from the API
server's discovery (one lookup per kind, cached), not from a table of ours; answers are read as
plain dicts. :func:`load_configuration` is the one login: kopf's login handler turns the same
configuration into its :class:`kopf.ConnectionInfo` (see :mod:`.handlers`), and in a pod the client
re-reads the ServiceAccount's rotating token by itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.dynamic import DynamicClient
from kubernetes_asyncio.dynamic.exceptions import ResourceNotFoundError

log = logging.getLogger("pyrocketmq.operator")

REQUEST_TIMEOUT_S = 30.0
MERGE_PATCH = "application/merge-patch+json"


class KubeError(Exception):
    """A failed API call; ``status`` is the HTTP status (0: the server was not reached), ``reason``
    the Status reason (NotFound, Forbidden …)."""

    def __init__(self, status: int, reason: str, message: str, what: str = "") -> None:
        super().__init__(f"{what}: {status} {reason}: {message}".strip(": "))
        self.status, self.reason, self.message = status, reason, message

    @property
    def not_found(self) -> bool:
        """The object is not there (a kind the API server does not serve is an error, not this)."""
        return self.status == 404 and self.reason != "NoSuchKind"

    @property
    def invalid(self) -> bool:
        return self.status == 422


async def load_configuration() -> client.Configuration | None:
    """In a pod: its ServiceAccount; elsewhere: the kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``);
    ``None`` when there is neither."""
    conf = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
        return conf
    except config.ConfigException:
        pass
    try:
        # $KUBECONFIG read now, not when the client library was imported; the file is never written.
        path = os.environ.get("KUBECONFIG") or "~/.kube/config"
        await config.load_kube_config(config_file=path, client_configuration=conf, persist_config=False)
    except (config.ConfigException, OSError) as e:
        log.info("no kubeconfig: %s", e)
        return None
    return conf


def label_selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _error(status: int, reason: str, body: Any, what: str) -> KubeError:
    """The API server's Status answer (reason, message) as a :class:`KubeError`."""
    try:
        doc = json.loads(body) if body else {}
    except (ValueError, TypeError):
        doc = {"message": str(body)}
    if not isinstance(doc, dict):
        doc = {"message": str(doc)}
    return KubeError(status, str(doc.get("reason") or reason), str(doc.get("message") or reason), what)


class KubeClient:
    """Example::

        kube = KubeClient(load_configuration)
        created, sts = await kube.apply(statefulset, field_manager="pyrocketmq-operator")
        await kube.close()
    """

    def __init__(self, configure: Callable[[], Awaitable[client.Configuration | None]]) -> None:
        self._configure = configure
        self._api: client.ApiClient | None = None
        self._dynamic: DynamicClient | None = None
        self._resources: dict[tuple[str, str], Any] = {}
        self._cache_dir: str | None = None
        self._connecting = asyncio.Lock()
        self._shut = False

    async def close(self) -> None:
        """Close the connections; every later request fails (operator shutdown)."""
        self._shut = True
        api, self._api, self._dynamic = self._api, None, None
        if api is not None:
            await api.close()
        if self._cache_dir is not None:
            shutil.rmtree(self._cache_dir, ignore_errors=True)

    async def _client(self) -> DynamicClient:
        async with self._connecting:  # calls that start together share one client
            if self._dynamic is None:
                conf = await self._configure()
                if conf is None:
                    raise KubeError(
                        0, "NoCredentials", "no kubeconfig and not in a pod: cannot reach the API server"
                    )
                api = client.ApiClient(conf)
                api.user_agent = "pyrocketmq-operator"
                # Discovery is cached in a file: this client's own, so no other run's stale one is read.
                self._cache_dir = self._cache_dir or tempfile.mkdtemp(prefix="pyrocketmq-operator-")
                try:
                    if self._shut:
                        raise KubeError(0, "Unreachable", "the operator is shutting down")
                    cache = str(Path(self._cache_dir) / "discovery.json")
                    self._dynamic = await DynamicClient(api, cache_file=cache)
                except BaseException:
                    await api.close()
                    raise
                self._api = api
            return self._dynamic

    async def _call(self, what: str, verb: str, api_version: str, kind: str, subresource: str | None = None,
                    **kwargs: Any) -> tuple[int, dict[str, Any]]:  # fmt: skip
        """One call through the dynamic client; a non-2xx answer raises :class:`KubeError`."""
        if self._shut:
            raise KubeError(0, "Unreachable", "the operator is shutting down", what)
        try:
            dyn = await self._client()
            resource = self._resources.get((api_version, kind))
            if resource is None:
                resource = self._resources[(api_version, kind)] = await dyn.resources.get(
                    api_version=api_version, kind=kind
                )
            target = resource.subresources[subresource] if subresource else resource
            # serialize=False: the raw answer, read as a dict here (and not raised on by the library)
            resp = await getattr(dyn, verb)(
                target, serialize=False, _request_timeout=REQUEST_TIMEOUT_S, **kwargs
            )
            status, text = resp.status, await resp.text()
        except ApiException as e:
            raise _error(int(e.status or 0), str(e.reason), e.body, what) from None
        except ResourceNotFoundError as e:
            raise KubeError(
                404, "NoSuchKind", f"the API server serves no {api_version} {kind}: {e}", what
            ) from None
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise KubeError(0, "Unreachable", f"{type(e).__name__}: {e}", what) from None
        except Exception:
            if self._shut:  # the session closed under a call in flight
                raise KubeError(0, "Unreachable", "the operator is shutting down", what) from None
            raise
        if status >= 300:
            raise _error(status, "", text, what)
        return status, json.loads(text) if text else {}

    async def _or_none(self, call: Awaitable[tuple[int, dict[str, Any]]]) -> dict[str, Any] | None:
        try:
            return (await call)[1]
        except KubeError as e:
            if e.not_found:
                return None
            raise

    # -- verbs ------------------------------------------------------------------------------------

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return await self._or_none(
            self._call(
                f"get {kind} {namespace}/{name}",
                "get",
                api_version,
                kind,
                name=name,
                namespace=namespace or None,
            )
        )

    async def list(
        self, api_version: str, kind: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        selector = label_selector(labels) if labels else None
        _, doc = await self._call(f"list {kind} in {namespace or 'the cluster'}", "get", api_version, kind,
                                  namespace=namespace or None, label_selector=selector)  # fmt: skip
        items: list[dict[str, Any]] = doc.get("items") or []
        for item in items:  # list items carry no apiVersion/kind
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    async def apply(
        self, obj: Mapping[str, Any], field_manager: str, force: bool = True
    ) -> tuple[bool, dict[str, Any]]:
        """Server-side apply ``obj``; returns ``(created, the object as stored)``."""
        meta = obj["metadata"]
        status, doc = await self._call(
            f"apply {obj['kind']} {meta.get('namespace')}/{meta['name']}", "server_side_apply",
            obj["apiVersion"], obj["kind"], body=dict(obj), namespace=meta.get("namespace"),
            field_manager=field_manager,
            force_conflicts="true" if force else "false",
        )  # fmt: skip
        return status == 201, doc

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """Create ``obj``; ``None`` when one of that name exists already (the caller reads it)."""
        meta = obj["metadata"]
        try:
            return (await self._call(f"create {obj['kind']} {meta.get('namespace')}/{meta['name']}", "create",
                                     obj["apiVersion"], obj["kind"], body=dict(obj),
                                     namespace=meta.get("namespace")))[1]  # fmt: skip
        except KubeError as e:
            if e.status == 409:
                return None
            raise

    async def replace(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """Replace ``obj`` as read (its ``metadata.resourceVersion``): ``None`` when it changed since
        (another writer came first: read it again)."""
        meta = obj["metadata"]
        try:
            return (await self._call(f"replace {obj['kind']} {meta.get('namespace')}/{meta['name']}",
                                     "replace", obj["apiVersion"], obj["kind"], body=dict(obj),
                                     name=meta["name"], namespace=meta.get("namespace")))[1]  # fmt: skip
        except KubeError as e:
            if e.status == 409:
                return None
            raise

    async def delete(self, api_version: str, kind: str, namespace: str, name: str,
                     propagation: str = "Background", grace_period: int | None = None) -> bool:
        """Delete; ``False`` when it was already gone. ``grace_period=0`` removes a pod at once, as
        ``kubectl delete --force`` does (for a pod whose kubelet no longer answers)."""
        return await self._or_none(self._call(
            f"delete {kind} {namespace}/{name}", "delete", api_version, kind, name=name,
            namespace=namespace or None, propagation_policy=propagation, grace_period_seconds=grace_period,
        )) is not None  # fmt: skip

    async def patch_labels(self, api_version: str, kind: str, namespace: str, name: str,
                           labels: Mapping[str, str | None]) -> dict[str, Any] | None:
        """Merge-patch ``metadata.labels`` (None removes one); ``None`` when the object is gone."""
        return await self._merge(api_version, kind, namespace, name, {"metadata": {"labels": dict(labels)}})

    async def patch_annotations(self, api_version: str, kind: str, namespace: str, name: str,
                                annotations: Mapping[str, str | None]) -> dict[str, Any] | None:
        """Merge-patch ``metadata.annotations`` (None removes one); ``None`` when the object is gone."""
        return await self._merge(
            api_version, kind, namespace, name, {"metadata": {"annotations": dict(annotations)}}
        )

    async def patch_status(self, api_version: str, kind: str, namespace: str, name: str,
                           status: Mapping[str, Any]) -> dict[str, Any] | None:
        """Merge-patch the status subresource; ``None`` when the object is gone."""
        return await self._merge(api_version, kind, namespace, name, {"status": status}, "status")

    async def get_scale(
        self, api_version: str, kind: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        """The ``scale`` subresource (``spec.replicas``, ``status.replicas``); ``None`` when gone."""
        return await self._or_none(self._call(f"get scale of {kind} {namespace}/{name}", "get", api_version,
                                              kind, "scale", name=name, namespace=namespace))  # fmt: skip

    async def set_scale(
        self, api_version: str, kind: str, namespace: str, name: str, replicas: int
    ) -> dict[str, Any]:
        """Merge-patch ``spec.replicas`` through the ``scale`` subresource."""
        doc = await self._merge(api_version, kind, namespace, name, {"spec": {"replicas": replicas}}, "scale")
        if doc is None:
            raise KubeError(404, "NotFound", f"{kind} {namespace}/{name} is gone", "scale")
        return doc

    async def _merge(self, api_version: str, kind: str, namespace: str, name: str, body: Mapping[str, Any],
                     subresource: str | None = None) -> dict[str, Any] | None:  # fmt: skip
        return await self._or_none(self._call(
            f"patch {subresource or ''} {kind} {namespace}/{name}", "patch", api_version, kind, subresource,
            body=dict(body), name=name, namespace=namespace or None, content_type=MERGE_PATCH,
        ))  # fmt: skip
