"""A real Kubernetes control plane on loopback: etcd + kube-apiserver (+ kube-controller-manager).

No kubelet, no scheduler: objects are stored, validated (OpenAPI, CEL, admission), watched and
reconciled by the built-in controllers we start, but Pods stay ``Pending`` forever. Unscheduled Pods
are deleted at once (no graceful termination), so namespaces and owner references clean up normally.

``start_kube(workdir, bin_dir)`` returns a ``KubeCluster``:

- ``kubeconfig`` (admin: a client certificate in group ``system:masters``), ``server``, ``env``
  (``os.environ`` + ``KUBECONFIG``, the bin dir first on ``PATH``, kubectl/helm caches under ``workdir``),
  ``ca_file``, ``bin_dir``, ``workdir``, ``processes``;
- ``kubectl(*args, input=None, check=True, timeout=60)`` / ``helm(...)`` -> ``CompletedProcess[str]``;
  ``input`` may be text or a manifest (dict / list of dicts, sent as JSON);
- ``apply(manifest, *args)``, ``get(*args) -> dict`` (``kubectl get -o json``),
  ``wait_until(fn, timeout, what)``, ``create_namespace(prefix)``;
- ``service_account_kubeconfig(namespace, name)``: a kubeconfig that authenticates as that
  ServiceAccount (a TokenRequest token), to run e.g. the operator with exactly its RBAC;
- ``log_tails()``, ``alive()``, ``stop()`` (terminate, then kill; asserts every process is gone).

Authorization is RBAC (as in a real cluster); certificates are made with the ``openssl`` CLI.
Nothing here imports ``pyrocketmq``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import ssl
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from localkube import pki
from tests.helpers.cluster import ManagedProcess, free_port, stop_all

T = TypeVar("T")

SERVICE_CIDR = "10.96.0.0/16"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
CLUSTER_NAME = "pyrocketmq-test"

# The controllers an operator test needs: workloads (Deployment -> ReplicaSet -> Pods, StatefulSet ->
# Pods + PVCs), garbage collection of owner references, namespace deletion, default ServiceAccounts
# (the ServiceAccount admission plugin wants one before a Pod is admitted) and tokens for
# hand-made ``kubernetes.io/service-account-token`` Secrets, kube-root-ca.crt,
# PodDisruptionBudget status, EndpointSlices for Services, aggregated ClusterRoles, and the
# PVC/PV protection finalizers (without their controllers a deleted PVC would hang forever).
CONTROLLERS = (
    "namespace-controller",
    "garbage-collector-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "disruption-controller",
    "endpointslice-controller",
    "clusterrole-aggregation-controller",
    "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
)


class ClusterStartError(RuntimeError):
    """A control-plane process did not come up; the message carries the log tails."""


class PrerequisiteMissing(RuntimeError):
    """A tool the harness needs (openssl) is absent; the caller decides between skip and fail."""


class KubeCommandError(subprocess.CalledProcessError):
    """A kubectl/helm command failed; ``str()`` shows its stderr (CalledProcessError's does not)."""

    def __str__(self) -> str:
        out = (self.stderr or "").strip() or (self.output or "").strip()
        return f"{' '.join(map(str, self.cmd))} exited {self.returncode}:\n{out}"


# --------------------------------------------------------------------------------------------------
# certificates


@dataclass(frozen=True, slots=True)
class Pki:
    dir: Path
    ca_crt: Path
    ca_key: Path
    serving_crt: Path
    serving_key: Path
    sa_key: Path  # signs ServiceAccount tokens
    sa_pub: Path  # verifies them
    admin_crt: Path  # CN=pyrocketmq-admin, O=system:masters
    admin_key: Path
    kcm_crt: Path  # CN=system:kube-controller-manager (the bootstrap RBAC identity)
    kcm_key: Path
    proxy_crt: Path  # CN=front-proxy-client: the aggregator's identity towards extension API servers
    proxy_key: Path


def make_pki(pki_dir: Path) -> Pki:
    """A throwaway CA, the API server's serving cert, client certs and a ServiceAccount key pair."""
    try:
        ca = pki.make_ca(pki_dir, "pyrocketmq-test-ca")
        sans = ["127.0.0.1", "10.96.0.1", "localhost", "kubernetes", "kubernetes.default",
                "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"]  # fmt: skip
        serving = pki.issue(pki_dir, "apiserver", "/CN=kube-apiserver", ca, server_names=sans, client=False)
        admin = pki.issue(pki_dir, "admin", "/O=system:masters/CN=pyrocketmq-admin", ca)
        kcm = pki.issue(pki_dir, "controller-manager", "/CN=system:kube-controller-manager", ca)
        proxy = pki.issue(pki_dir, "front-proxy-client", "/CN=front-proxy-client", ca)
        sa_key, sa_pub = pki.service_account_keys(pki_dir)
    except pki.PkiError as exc:
        if shutil.which("openssl") is None:
            raise PrerequisiteMissing(str(exc)) from exc
        raise
    return Pki(pki_dir, ca[0], ca[1], *serving, sa_key, sa_pub, *admin, *kcm, *proxy)


def write_kubeconfig(path: Path, server: str, ca: Path, user: str, credentials: Mapping[str, str]) -> Path:
    return pki.write_kubeconfig(path, server, ca, user, credentials, CLUSTER_NAME)




# --------------------------------------------------------------------------------------------------
# the cluster


def _jsonable_input(
    value: str | bytes | Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, Mapping):
        return json.dumps(value)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(value)})


@dataclass
class KubeCluster:
    """A running control plane; see the module docstring."""

    workdir: Path
    bin_dir: Path
    server: str
    kubeconfig: Path
    ca_file: Path
    pki: Pki
    env: dict[str, str]
    processes: list[ManagedProcess] = field(default_factory=list)

    # -- commands ----------------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        input: str | bytes | Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        check: bool = True,
        timeout: float = 60,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command with ``self.env`` (plus ``env``); on ``check`` a failure raises
        ``KubeCommandError``."""
        argv = [str(a) for a in argv]
        proc = subprocess.run(
            argv,
            input=_jsonable_input(input),
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**self.env, **(env or {})},
            cwd=self.workdir,
        )
        if check and proc.returncode != 0:
            raise KubeCommandError(proc.returncode, argv, proc.stdout, proc.stderr)
        return proc

    def kubectl(
        self, *args: str, input: Any = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return self.run([str(self.bin_dir / "kubectl"), *args], input=input, check=check, timeout=timeout)

    def helm(
        self, *args: str, input: Any = None, check: bool = True, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        return self.run([str(self.bin_dir / "helm"), *args], input=input, check=check, timeout=timeout)

    def apply(self, manifest: Any, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubectl apply -f -`` (server-side with ``--server-side`` in ``args``); manifest as text or
        dicts."""
        return self.kubectl("apply", "-f", "-", *args, input=manifest, check=check)

    def merge_patch(
        self, kind: str, name: str, namespace: str, patch: Mapping[str, Any]
    ) -> subprocess.CompletedProcess[str]:
        """``kubectl patch --type=merge``: ``patch`` (JSON-able; ``None`` deletes a field) merged into
        the object."""
        return self.kubectl("patch", kind, name, "-n", namespace, "--type=merge", "-p", json.dumps(patch))

    def get(self, *args: str) -> dict[str, Any]:
        """``kubectl get <args> -o json``, parsed."""
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def create_namespace(self, prefix: str = "t") -> str:
        name = f"{prefix}-{secrets.token_hex(3)}"
        self.kubectl("create", "namespace", name)
        return name

    @staticmethod
    def wait_until(
        fn: Callable[[], T], timeout: float = 30, what: str = "condition", interval: float = 0.25
    ) -> T:
        """Call ``fn`` until it returns something truthy (returned) or ``timeout`` passes (TimeoutError)."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while True:
            try:
                last = fn()
            except KubeCommandError as exc:  # e.g. NotFound while a controller catches up
                last = exc
            else:
                if last:
                    return last
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{what} not reached within {timeout:.0f} s; last result: {last}")
            time.sleep(interval)

    def service_account_kubeconfig(self, namespace: str, name: str, *, duration: str = "24h") -> Path:
        """A kubeconfig acting as ServiceAccount ``namespace/name`` (which must exist)."""
        token = self.kubectl(
            "create", "token", name, "-n", namespace, f"--duration={duration}"
        ).stdout.strip()
        path = self.workdir / f"kubeconfig-sa-{namespace}-{name}"
        return write_kubeconfig(path, self.server, self.ca_file, f"{namespace}-{name}", {"token": token})

    # -- lifecycle ---------------------------------------------------------------------------------

    def alive(self) -> bool:
        return all(p.alive() for p in self.processes)

    def log_tails(self, lines: int = 40) -> str:
        return "\n".join(f"===== {p.name} ({p.log_path}) =====\n{p.tail(lines)}" for p in self.processes)

    def stop(self) -> None:
        stop_all(self.processes)


def _wait_http(
    proc: ManagedProcess, url: str, ctx: ssl.SSLContext | None, timeout: float, ok: Callable[[str], bool]
) -> None:
    deadline = time.monotonic() + timeout
    status, body = 0, ""
    while time.monotonic() < deadline:
        if not proc.alive():
            raise ClusterStartError(
                f"{proc.name} exited (code {proc.proc and proc.proc.returncode}):\n{proc.tail(60)}"
            )
        status, body = pki.http_get(url, ctx)
        if status == 200 and ok(body):
            return
        time.sleep(0.2)
    raise ClusterStartError(
        f"{url} not ready within {timeout:.0f} s (last: {status} {body[-2000:]}):\n{proc.tail(60)}"
    )


def start_kube(  # long: the control plane's start sequence, in order
    workdir: Path,
    bin_dir: Path,
    *,
    controller_manager: bool = True,
    timeout: float = 90,
    extra_apiserver_args: Sequence[str] = (),
) -> KubeCluster:
    """Start etcd, kube-apiserver and (optionally) kube-controller-manager; return once all are ready.

    On failure every started process is stopped and ``ClusterStartError`` carries their log tails.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    certs = make_pki(workdir / "pki")
    logs = workdir / "logs"
    etcd_client, etcd_peer, api_port, kcm_port = free_port(), free_port(), free_port(), free_port()
    server = f"https://127.0.0.1:{api_port}"
    kubeconfig = write_kubeconfig(
        workdir / "kubeconfig",
        server,
        certs.ca_crt,
        "admin",
        pki.cert_credentials(certs.admin_crt, certs.admin_key),
    )
    env = dict(os.environ)
    env.update(
        KUBECONFIG=str(kubeconfig),
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        KUBECACHEDIR=str(workdir / "kube-cache"),  # kubectl's discovery cache, not ~/.kube/cache
        HELM_CACHE_HOME=str(workdir / "helm" / "cache"),
        HELM_CONFIG_HOME=str(workdir / "helm" / "config"),
        HELM_DATA_HOME=str(workdir / "helm" / "data"),
    )
    cluster = KubeCluster(workdir, bin_dir, server, kubeconfig, certs.ca_crt, certs, env)

    etcd = ManagedProcess(
        "etcd",
        [
            bin_dir / "etcd",
            "--name=pyrocketmq-test",
            f"--data-dir={workdir / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
            f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
            f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-cluster=pyrocketmq-test=http://127.0.0.1:{etcd_peer}",
            f"--quota-backend-bytes={256 * 2**20}",
            "--snapshot-count=5000",
            "--unsafe-no-fsync",  # a throwaway store: no fsync keeps the shared disk quiet and tests fast
            "--log-level=warn",
        ],
        logs / "etcd.log",
    )
    apiserver_args = [
        bin_dir / "kube-apiserver",
        f"--etcd-servers=http://127.0.0.1:{etcd_client}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={api_port}",
        f"--cert-dir={workdir / 'apiserver-certs'}",
        f"--tls-cert-file={certs.serving_crt}",
        f"--tls-private-key-file={certs.serving_key}",
        f"--client-ca-file={certs.ca_crt}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={certs.sa_pub}",
        f"--service-account-signing-key-file={certs.sa_key}",
        "--authorization-mode=RBAC",
        # The front-proxy (request-header) settings kubeadm sets: they land in the
        # kube-system/extension-apiserver-authentication ConfigMap that delegated authentication
        # (the controller manager's, any extension API server's) reads.
        f"--requestheader-client-ca-file={certs.ca_crt}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={certs.proxy_crt}",
        f"--proxy-client-key-file={certs.proxy_key}",
        # The "kubernetes" Service's endpoints cannot be a loopback address: do not maintain them.
        "--endpoint-reconciler-type=none",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        "--profiling=false",
        "--event-ttl=30m",
    ]
    if not controller_manager:
        # Without the serviceaccount controller no namespace gets its "default" ServiceAccount, and the
        # ServiceAccount admission plugin would refuse every Pod.
        apiserver_args.append("--disable-admission-plugins=ServiceAccount")
    apiserver = ManagedProcess(
        "kube-apiserver", [*apiserver_args, *extra_apiserver_args], logs / "kube-apiserver.log"
    )
    try:
        cluster.processes.append(etcd.start())
        _wait_http(etcd, f"http://127.0.0.1:{etcd_client}/health", None, timeout, lambda b: '"true"' in b)
        cluster.processes.append(apiserver.start())
        _wait_http(
            apiserver,
            f"{server}/readyz",
            pki.client_context(certs.ca_crt, certs.admin_crt, certs.admin_key),
            timeout,
            lambda b: b.strip() == "ok",
        )
        if controller_manager:
            kcm_kubeconfig = write_kubeconfig(
                workdir / "kubeconfig-controller-manager",
                server,
                certs.ca_crt,
                "system:kube-controller-manager",
                pki.cert_credentials(certs.kcm_crt, certs.kcm_key),
            )
            kcm = ManagedProcess(
                "kube-controller-manager",
                [
                    bin_dir / "kube-controller-manager",
                    f"--kubeconfig={kcm_kubeconfig}",
                    f"--authentication-kubeconfig={kcm_kubeconfig}",
                    f"--authorization-kubeconfig={kcm_kubeconfig}",
                    "--bind-address=127.0.0.1",
                    f"--secure-port={kcm_port}",
                    f"--cert-dir={workdir / 'controller-manager-certs'}",
                    "--leader-elect=false",
                    "--use-service-account-credentials=true",  # each controller acts with its own RBAC
                    f"--root-ca-file={certs.ca_crt}",
                    f"--service-account-private-key-file={certs.sa_key}",
                    f"--controllers={','.join(CONTROLLERS)}",
                    "--profiling=false",
                    "--kube-api-qps=100",
                    "--kube-api-burst=200",
                    "--concurrent-gc-syncs=5",
                ],
                logs / "kube-controller-manager.log",
            )
            cluster.processes.append(kcm.start())
            _wait_http(
                kcm,
                f"https://127.0.0.1:{kcm_port}/healthz",
                pki.insecure_context(),
                timeout,
                lambda b: b.strip() == "ok",
            )
            # Pods need the namespace's default ServiceAccount (ServiceAccount admission).
            cluster.wait_until(
                lambda: (
                    cluster.kubectl(
                        "get", "serviceaccount", "default", "-n", "default", check=False
                    ).returncode
                    == 0
                ),
                timeout,
                "the default ServiceAccount in namespace default",
            )
    except BaseException as exc:
        tails = cluster.log_tails()
        cluster.stop()
        if isinstance(exc, ClusterStartError):
            raise
        raise ClusterStartError(f"the Kubernetes control plane did not start: {exc}\n{tails}") from exc
    return cluster


