"""Certificates and kubeconfigs for a local cluster, made with the ``openssl`` command, and the
HTTPS GETs made with them (health endpoints, API reads while a cluster starts).

One throwaway CA signs every certificate: the API server's serving certificate and one client
certificate per identity (admin, controller manager, scheduler, the node's kubelet, kube-proxy).
Keys are P-256. Standard library only. ``localkube`` and the tests' control plane both use this
module: kubeconfigs and these calls exist once.
"""

from __future__ import annotations

import base64
import secrets
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path


class PkiError(RuntimeError):
    """openssl is missing or failed."""


def _openssl(*args: str, cwd: Path) -> None:
    if shutil.which("openssl") is None:
        raise PkiError("the `openssl` command is not on PATH (Debian: apt-get install openssl)")
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise PkiError(f"openssl {' '.join(args)} failed:\n{proc.stderr}")


def ec_key(path: Path) -> Path:
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(path), cwd=path.parent)
    path.chmod(0o600)
    return path


def make_ca(pki_dir: Path, common_name: str) -> tuple[Path, Path]:
    """A self-signed CA valid for ten years: ``(ca.crt, ca.key)``."""
    pki_dir.mkdir(parents=True, exist_ok=True)
    key = ec_key(pki_dir / "ca.key")
    crt = pki_dir / "ca.crt"
    _openssl(
        "req", "-x509", "-new", "-key", str(key), "-subj", f"/CN={common_name}", "-days", "3650",
        "-sha256", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        "-out", str(crt), cwd=pki_dir,
    )  # fmt: skip
    return crt, key


_LEAF = "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"


def issue(
    pki_dir: Path,
    name: str,
    subject: str,
    ca: tuple[Path, Path],
    *,
    server_names: Iterable[str] = (),
    client: bool = True,
) -> tuple[Path, Path]:
    """``<name>.crt``/``<name>.key`` signed by ``ca``; ``server_names`` (IPs or DNS names) make it a
    serving certificate with those SANs."""
    names = list(server_names)
    usages = (["serverAuth"] if names else []) + (["clientAuth"] if client else [])
    ext = _LEAF + f"extendedKeyUsage={','.join(usages)}\n"
    if names:
        sans = [f"IP:{n}" if n.replace(".", "").isdigit() else f"DNS:{n}" for n in names]
        ext += f"subjectAltName={','.join(sans)}\n"
    key = ec_key(pki_dir / f"{name}.key")
    csr, crt, extfile = pki_dir / f"{name}.csr", pki_dir / f"{name}.crt", pki_dir / f"{name}.ext"
    extfile.write_text(ext)
    _openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr), cwd=pki_dir)
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]),
        "-set_serial", "0x" + secrets.token_hex(16), "-days", "3650", "-sha256",
        "-extfile", str(extfile), "-out", str(crt), cwd=pki_dir,
    )  # fmt: skip
    csr.unlink()
    extfile.unlink()
    return crt, key


def service_account_keys(pki_dir: Path) -> tuple[Path, Path]:
    """The key pair that signs and verifies ServiceAccount tokens: ``(sa.key, sa.pub)``."""
    key = ec_key(pki_dir / "sa.key")
    pub = pki_dir / "sa.pub"
    _openssl("ec", "-in", str(key), "-pubout", "-out", str(pub), cwd=pki_dir)
    return key, pub


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def cert_credentials(crt: Path, key: Path) -> dict[str, str]:
    return {"client-certificate-data": b64(crt), "client-key-data": b64(key)}


def write_kubeconfig(
    path: Path, server: str, ca: Path, user: str, credentials: Mapping[str, str], cluster: str
) -> Path:
    """A one-context kubeconfig; ``credentials`` are the ``user`` fields (cert data or a token)."""
    user_fields = "".join(f"    {k}: {v}\n" for k, v in credentials.items())
    path.write_text(
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: {cluster}\n"
        "  cluster:\n"
        f"    server: {server}\n"
        f"    certificate-authority-data: {b64(ca)}\n"
        "users:\n"
        f"- name: {user}\n"
        "  user:\n"
        f"{user_fields}"
        "contexts:\n"
        f"- name: {user}@{cluster}\n"
        "  context:\n"
        f"    cluster: {cluster}\n"
        f"    user: {user}\n"
        "    namespace: default\n"
        f"current-context: {user}@{cluster}\n"
    )
    path.chmod(0o600)
    return path


def client_context(ca: Path, crt: Path, key: Path) -> ssl.SSLContext:
    """TLS trusting ``ca`` and presenting the client certificate ``crt``/``key``."""
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.load_cert_chain(str(crt), str(key))
    return ctx


def insecure_context() -> ssl.SSLContext:
    """For a daemon's self-signed health endpoint on loopback (controller manager, scheduler)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def http_get(url: str, ctx: ssl.SSLContext | None = None, timeout: float = 5) -> tuple[int, str]:
    """``(status, body)``; status 0 with the error when nothing answered."""
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc)
