"""The operator's verbs (``pyrocketmq.operator.kubeapi``, on the official asyncio client) against a
real API server: what each answers when the object is there, gone, refused or invalid."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pyrocketmq.operator.kubeapi import KubeClient, KubeError, load_configuration

from .cluster import KubeCluster


def _run(kubeconfig: Path, body, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))

    async def main():
        kube = KubeClient(load_configuration)
        try:
            return await body(kube)
        finally:
            await kube.close()

    return asyncio.run(main())


def _config_map(ns: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "verbs", "namespace": ns,
            "labels": {"app": "verbs"}}, "data": data}  # fmt: skip


def test_verbs_on_a_real_api_server(kube: KubeCluster, kube_namespace: str, monkeypatch: pytest.MonkeyPatch):
    ns = kube_namespace

    async def body(api: KubeClient):
        assert (await api.apply(_config_map(ns, a="1"), "verbs-test"))[0] is True  # created
        created, stored = await api.apply(_config_map(ns, a="2"), "verbs-test")
        assert created is False and stored["data"] == {"a": "2"}
        assert [o["metadata"]["name"] for o in await api.list("v1", "ConfigMap", ns, {"app": "verbs"})] == [
            "verbs"
        ]
        assert await api.list("v1", "ConfigMap", ns, {"app": "none"}) == []
        patched = await api.patch_labels("v1", "ConfigMap", ns, "verbs", {"app": None, "other": "x"})
        assert patched is not None and patched["metadata"]["labels"] == {"other": "x"}
        with pytest.raises(KubeError) as invalid:
            await api.apply({**_config_map(ns), "data": {"bad key!": "x"}}, "verbs-test")
        assert invalid.value.invalid and "bad key!" in invalid.value.message
        assert await api.delete("v1", "ConfigMap", ns, "verbs") is True
        assert await api.delete("v1", "ConfigMap", ns, "verbs") is False  # already gone
        assert await api.get("v1", "ConfigMap", ns, "verbs") is None
        assert await api.patch_status("apps/v1", "StatefulSet", ns, "none", {"replicas": 1}) is None
        assert await api.get_scale("apps/v1", "StatefulSet", ns, "none") is None
        assert [n["metadata"]["name"] for n in await api.list("v1", "Node", "")] == []  # cluster-scoped
        with pytest.raises(KubeError) as unknown:  # a kind nobody serves is an error, not "gone"
            await api.get("pyrocketmq.io/v1alpha1", "NoSuchThing", ns, "x")
        assert unknown.value.reason == "NoSuchKind" and not unknown.value.not_found

    _run(kube.kubeconfig, body, monkeypatch)


def test_a_refused_call_says_so(kube: KubeCluster, kube_namespace: str, monkeypatch: pytest.MonkeyPatch):
    """A ServiceAccount without rights: 403 Forbidden with the server's message, not a crash."""
    kube.kubectl("create", "serviceaccount", "nobody", "-n", kube_namespace)

    async def body(api: KubeClient):
        with pytest.raises(KubeError) as refused:
            await api.get("v1", "Secret", kube_namespace, "anything")
        return refused.value

    err = _run(kube.service_account_kubeconfig(kube_namespace, "nobody"), body, monkeypatch)
    assert err.status == 403 and err.reason == "Forbidden" and "secrets" in err.message
