"""spec.tls and spec.acl: what the operator renders from them (Secret volumes, broker.conf keys,
name-server flags, the broker's own account from the Secret), what it refuses, and how it reaches
such brokers itself. The rendered broker.conf is read back by the broker's own settings parser."""

from __future__ import annotations

import base64

import pytest

from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.namesrv.settings import NamesrvSettings
from pyrocketmq.operator.model import NameServerModel, SpecError
from pyrocketmq.operator.names import namesrv_addresses
from pyrocketmq.operator.podconf import pod_conf
from pyrocketmq.operator.render import broker_conf, render_broker, render_nameserver
from pyrocketmq.operator.security import SecretError, client_security
from pyrocketmq.remoting.tls import TlsMode

from .conftest import SETTINGS, body, broker, by_kind, conf_dict

NS = namesrv_addresses("names", "prod", 2)


def secret(**data: str) -> dict:
    return {"data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def test_broker_with_tls_and_acl_mounts_the_secrets_and_sets_the_keys():
    model = broker(
        tls={"secretName": "broker-tls", "clientAuth": "require"},
        acl={"secretName": "broker-acl"},
        nameServer={"name": "names", "tls": True},
    )
    conf = conf_dict(broker_conf(model, 0, NS))
    assert conf["tls.server.mode"] == "enforcing" and conf["tls.server.need.client.auth"] == "require"
    assert conf["tls.server.certPath"].endswith("/tls.crt") and conf["tls.server.trustCertPath"].endswith(
        "/ca.crt"
    )
    assert conf["tls.enable"] == "true" and conf["tls.client.trustCertPath"].endswith("/ca.crt")
    assert conf["aclEnable"] == "true" and conf["aclConfigFile"].endswith("/plain_acl.yml")
    assert "secretKey" not in conf  # never in a ConfigMap
    [sts] = by_kind(render_broker(model, NS, SETTINGS), "StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {"tls": "broker-tls", "acl": "broker-acl"}
    [container] = pod["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert conf["tls.server.certPath"].startswith(mounts["tls"]) and conf["aclConfigFile"].startswith(
        mounts["acl"]
    )
    env = {e["name"]: e.get("valueFrom") for e in container["env"]}
    assert env["PYROCKETMQ_SECRET_KEY"] == {
        "secretKeyRef": {"name": "broker-acl", "key": "secretKey", "optional": True}
    }
    pod_text = pod_conf(
        broker_conf(model, 0, NS),
        {
            "POD_NAME": "orders-0-0",
            "POD_IP": "10.0.0.5",
            "PYROCKETMQ_ACCESS_KEY": "operator",
            "PYROCKETMQ_SECRET_KEY": "s3cret",
        },
    )
    pod_conf_keys = conf_dict(pod_text)
    assert (pod_conf_keys["accessKey"], pod_conf_keys["secretKey"]) == ("operator", "s3cret")


def test_the_broker_reads_what_the_operator_renders(tmp_path):
    """Certificates are checked when the broker starts: the paths are real ones here."""
    from tests.helpers.certs import make_certs

    certs = make_certs(tmp_path)
    model = broker(tls={"secretName": "broker-tls", "mode": "permissive"})
    conf = conf_dict(broker_conf(model, 0, NS))
    conf.update({"tls.server.certPath": str(certs.server_cert), "tls.server.keyPath": str(certs.server_key)})
    settings = BrokerSettings.from_conf(conf)
    assert settings.network.tls.mode is TlsMode.PERMISSIVE and not set(settings.extra) - {"haListenPort"}


def test_name_server_tls_is_passed_as_settings_flags(tmp_path):
    from tests.helpers.certs import make_certs

    model = NameServerModel.from_body(body("NameServer", name="names", tls={"secretName": "ns-tls"}))
    [sts] = by_kind(render_nameserver(model, SETTINGS), "StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    sets = dict(a.removeprefix("--set=").split("=", 1) for a in args if a.startswith("--set="))
    assert sets["tls.server.mode"] == "enforcing"
    assert {"name": "tls", "secret": {"secretName": "ns-tls", "defaultMode": 0o440}} in pod["volumes"]
    certs = make_certs(tmp_path)
    sets.update({"tls.server.certPath": str(certs.server_cert), "tls.server.keyPath": str(certs.server_key)})
    assert NamesrvSettings.load(None, sets).tls.mode is TlsMode.ENFORCING


@pytest.mark.parametrize(("spec", "words"), [
    ({"tls": {"secretName": "Bad_Name"}}, "spec.tls.secretName"),
    ({"tls": {"secretName": "ok", "mode": "sometimes"}}, "spec.tls.mode"),
    ({"tls": {"secretName": "ok", "clientAuth": "maybe"}}, "spec.tls.clientAuth"),
    ({"acl": {"secretName": ""}}, "spec.acl.secretName"),
    ({"config": {"aclEnable": "true"}}, "set by the operator"),
    ({"config": {"tls.server.mode": "disabled"}}, "set by the operator"),
])
def test_bad_security_specs_are_refused_with_what_to_fix(spec, words):
    with pytest.raises(SpecError, match=words):
        broker(**spec)


def test_how_the_operator_reaches_such_brokers():
    model = broker(tls={"secretName": "t"}, acl={"secretName": "a"})
    sec = client_security(model, secret(**{"ca.crt": "-----BEGIN CERTIFICATE-----\n"}),
                          secret(accessKey="operator1", secretKey="operator-secret"))
    assert sec.tls.enabled and sec.tls.verify and not sec.tls.check_hostname and sec.tls.trust_cert_path
    assert (sec.access_key, sec.secret_key) == ("operator1", "operator-secret")
    no_ca = client_security(broker(tls={"secretName": "t"}), secret(), None)
    assert no_ca.tls.enabled and not no_ca.tls.verify
    plain = client_security(broker(), None, None)
    assert not plain.tls.enabled and not plain.access_key
    with pytest.raises(SecretError, match="accessKey/secretKey"):
        client_security(broker(acl={"secretName": "a"}), None, secret(**{"plain_acl.yml": "accounts: []"}))


def test_a_changed_secret_rolls_the_pods():
    import dataclasses

    from pyrocketmq.operator.render.common import (
        ANNOTATION_SECRETS_HASH,
        ANNOTATION_TEMPLATE_HASH,
        secrets_hash,
    )

    model = broker(tls={"secretName": "t"})
    old = secrets_hash({"t": secret(**{"tls.crt": "A", "tls.key": "K"})})
    new = secrets_hash({"t": secret(**{"tls.crt": "B", "tls.key": "K"})})
    assert old != new and old == secrets_hash({"t": secret(**{"tls.key": "K", "tls.crt": "A"})})

    def template(h: str) -> tuple[str, str]:
        [sts] = by_kind(
            render_broker(dataclasses.replace(model, secrets_hash=h), NS, SETTINGS), "StatefulSet"
        )
        return (sts["spec"]["template"]["metadata"]["annotations"][ANNOTATION_SECRETS_HASH],
                sts["metadata"]["annotations"][ANNOTATION_TEMPLATE_HASH])

    (a_hash, a_template), (b_hash, b_template) = template(old), template(new)
    assert (a_hash, b_hash) == (old, new) and a_template != b_template  # the rollout gate sees a new template
    ns_model = NameServerModel.from_body(body("NameServer", name="names", tls={"secretName": "t"}))
    [sts] = by_kind(
        render_nameserver(dataclasses.replace(ns_model, secrets_hash=old), SETTINGS), "StatefulSet"
    )
    assert sts["spec"]["template"]["metadata"]["annotations"][ANNOTATION_SECRETS_HASH] == old


def test_a_missing_or_forbidden_secret_says_what_to_do():
    import asyncio

    from pyrocketmq.operator.kubeapi import KubeError
    from pyrocketmq.operator.security import read_secrets

    async def forbidden(api_version, kind, namespace, name):
        raise KubeError(403, "Forbidden", "secrets is forbidden")

    async def missing(api_version, kind, namespace, name):
        return None

    for getter, reason, words in ((forbidden, "SecretForbidden", "rbac.readSecrets=true"),
                                  (missing, "SecretNotFound", "not found in namespace prod")):
        with pytest.raises(SecretError, match=words) as e:
            asyncio.run(read_secrets(getter, "prod", ["broker-tls"]))
        assert e.value.reason == reason


def test_name_server_acl_mounts_the_file_and_the_name_server_reads_it(tmp_path):
    import yaml

    model = NameServerModel.from_body(body("NameServer", name="names", acl={"secretName": "mq-acl"}))
    [sts] = by_kind(render_nameserver(model, SETTINGS), "StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    [container] = pod["containers"]
    sets = dict(a.removeprefix("--set=").split("=", 1) for a in container["args"] if a.startswith("--set="))
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert sets["aclEnable"] == "true" and sets["aclConfigFile"] == f"{mounts['acl']}/plain_acl.yml"
    assert {"name": "acl", "secret": {"secretName": "mq-acl", "defaultMode": 0o440}} in pod["volumes"]
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(
        yaml.safe_dump(
            {"accounts": [{"accessKey": "operator1", "secretKey": "operator-secret", "admin": True}]}
        )
    )
    assert NamesrvSettings.load(None, {**sets, "aclConfigFile": str(acl)}).acl_file == str(acl)
    with pytest.raises(SpecError, match="spec.acl.secretName"):
        NameServerModel.from_body(body("NameServer", name="names", acl={"secretName": "Not_A_Name"}))


def test_an_edited_acl_file_does_not_roll_pods_but_new_keys_or_certificates_do():
    import asyncio

    from pyrocketmq.operator.security import read_broker_secrets, read_nameserver_secrets

    def getter(data):
        async def get(api_version, kind, namespace, name):
            return data[name]
        return get

    def hashes(acl_file: str, secret_key: str, cert: str) -> tuple[str, str]:
        data = {
            "acl": secret(**{"plain_acl.yml": acl_file, "accessKey": "operator1", "secretKey": secret_key}),
            "tls": secret(**{"tls.crt": cert, "tls.key": "K"}),
        }
        b, _ = asyncio.run(
            read_broker_secrets(getter(data), broker(acl={"secretName": "acl"}, tls={"secretName": "tls"}))
        )
        n = asyncio.run(read_nameserver_secrets(getter(data), NameServerModel.from_body(
            body("NameServer", name="names", acl={"secretName": "acl"}, tls={"secretName": "tls"}))))
        return b.secrets_hash, n.secrets_hash

    base = hashes("accounts: [a]", "operator-secret", "A")
    assert hashes("accounts: [a, b]", "operator-secret", "A") == base  # re-read in place
    assert (
        hashes("accounts: [a]", "rotated-secret", "A")[0] != base[0]
    )  # the brokers' own account: env, restart
    assert all(x != y for x, y in zip(hashes("accounts: [a]", "operator-secret", "B"), base, strict=True))
    with pytest.raises(SecretError, match="has no plain_acl.yml"):
        asyncio.run(read_nameserver_secrets(getter({"acl": secret(accessKey="x")}), NameServerModel.from_body(
            body("NameServer", name="names", acl={"secretName": "acl"}))))
