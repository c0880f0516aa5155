"""Resolve the Apache RocketMQ jars the conformance tests run, into a cache outside the repository.

Layout (``PYROCKETMQ_CACHE``, default ``~/.cache/pyrocketmq``)::

    <cache>/m2/                       Maven's local repository (downloads)
    <cache>/rocketmq-4.9.8/lib/*.jar  client side: rocketmq-client + rocketmq-tools 4.9.8, example 4.7.0
    <cache>/rocketmq-4.9.8/.resolved  marker: written last, holds the pom's hash
    <cache>/rocketmq-4.9.7/lib/*.jar  server side: rocketmq-namesrv + rocketmq-broker 4.9.7
    <cache>/rocketmq-4.9.7/.resolved
    <cache>/rocketmq-5.5.1/lib/*.jar  server side: rocketmq-namesrv + rocketmq-broker 5.5.1 (the newest peer)
    <cache>/rocketmq-tools-5.3.3/lib/*.jar  Apache 5.3's mqadmin (rocketmq-tools 5.3.3): ACL 2.0 commands

Why two versions: Maven Central has no 4.9.8 ``rocketmq-namesrv``/``rocketmq-broker``/``rocketmq-example``
jars (only client, tools, common, remoting, store... were published for 4.9.8). The servers therefore
run 4.9.7 (the tag PROTOCOL.md was read from) and the clients 4.9.8; the two closures are never mixed.
``rocketmq-example`` 4.7.0 (newest 4.x on Central) is resolved onto the client classpath for the
benchmark tools, with its own RocketMQ dependencies excluded so it runs on the 4.9.8 client.

5.5.1 (``server55``, the benchmarks' newest peer) is published only in part: its broker, common,
remoting, store, tiered-store and controller jars are on Central, its namesrv, client, srvutil,
filter, auth and tools jars are not, so those are 5.5.0's in the same closure (pinned in pom.xml).

Idempotent and safe for parallel pytest workers: an exclusive ``flock`` per profile, a marker file
written only after the jars were copied into place, and a re-check of the marker under the lock.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from localkube.tools import cache_root, file_lock  # one cache layout (PYROCKETMQ_CACHE) and one lock

POM = Path(__file__).with_name("pom.xml")

CLIENT_VERSION = "4.9.8"
SERVER_VERSION = "4.9.7"


class PrerequisiteMissing(RuntimeError):
    """Java, Maven or Maven Central is not available; the caller decides between skip and fail."""


@dataclass(frozen=True, slots=True)
class Profile:
    name: str  # the Maven profile in pom.xml
    version: str  # the RocketMQ version it resolves (names the cache directory)


CLIENT = Profile("client", CLIENT_VERSION)
CLIENT5 = Profile("client5", "5.0.8")
"""The official 5.x Java client (gRPC), for the broker's 5.x endpoint."""
SERVER5 = Profile("server5", "5.2.0")
"""Apache's 5.x name server and proxy (local mode: broker inside), the 5.x benchmark peer."""
SERVER = Profile("server", SERVER_VERSION)
SERVER55 = Profile("server55", "5.5.1")
"""Apache's newest name server and broker, the second peer of the benchmarks' 4.x-protocol rows."""
TOOLS53 = Profile("tools53", "tools-5.3.3")
"""Apache 5.3's mqadmin (rocketmq-tools 5.3.3 and its closure): the ACL 2.0 user and ACL commands."""


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def lib_dir(profile: Profile) -> Path:
    return cache_root() / f"rocketmq-{profile.version}" / "lib"


def _marker(profile: Profile) -> Path:
    return lib_dir(profile).parent / ".resolved"


def _is_resolved(profile: Profile) -> bool:
    marker = _marker(profile)
    if not marker.is_file() or not lib_dir(profile).is_dir():
        return False
    return marker.read_text().split("\n", 1)[0].strip() == _pom_digest()


def resolve(profile: Profile, *, timeout: float = 900) -> Path:
    """Return the directory holding ``profile``'s jars, downloading them first if needed."""
    if _is_resolved(profile):
        return lib_dir(profile)
    with file_lock(cache_root() / f".{profile.name}.lock"):
        if _is_resolved(profile):
            return lib_dir(profile)
        mvn = shutil.which("mvn")
        if mvn is None:
            raise PrerequisiteMissing("`mvn` (Maven) is not on PATH")
        if shutil.which("java") is None:
            raise PrerequisiteMissing("`java` is not on PATH")
        target = lib_dir(profile)
        partial = target.with_name("lib.partial")
        shutil.rmtree(partial, ignore_errors=True)
        cmd = [
            mvn,
            "-q",
            "-B",
            "-f",
            str(POM),
            f"-P{profile.name}",
            f"-Dmaven.repo.local={cache_root() / 'm2'}",
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={partial}",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise PrerequisiteMissing(f"Maven did not finish in {timeout:.0f} s: {' '.join(cmd)}") from exc
        if proc.returncode != 0 or not any(partial.glob("*.jar")):
            raise PrerequisiteMissing(
                f"Maven could not resolve the RocketMQ {profile.name} jars (network? Maven Central?):\n"
                + _maven_errors(proc.stdout + proc.stderr)
            )
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        jars = sorted(p.name for p in target.glob("*.jar"))
        _marker(profile).write_text(_pom_digest() + "\n" + "\n".join(jars) + "\n")
        return target


_MAVEN_BOILERPLATE = ("to see the full stack trace", "re-run maven", "for more information", "[help")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _maven_errors(output: str, limit: int = 12) -> str:
    """The informative ``[ERROR]`` lines of a failed Maven run (or its tail if there are none)."""
    lines = []
    for raw in _ANSI.sub("", output).splitlines():
        if not raw.startswith("[ERROR]"):
            continue
        text = raw[len("[ERROR]") :].strip()
        if text and not text.lower().startswith(_MAVEN_BOILERPLATE):
            lines.append(text)
    return "\n".join(lines[:limit] or output.splitlines()[-limit:])


def classpath(lib: Path, *extra: Path) -> str:
    """A ``java -cp`` value: the extra entries first, then every jar of ``lib`` in a stable order."""
    entries = [str(p) for p in extra] + [str(p) for p in sorted(lib.glob("*.jar"))]
    return os.pathsep.join(entries)


if __name__ == "__main__":  # python -m tests.conformance.maven: fetch every profile the tests use
    for prof in (CLIENT, SERVER, SERVER55, CLIENT5, SERVER5, TOOLS53):
        print(prof.name, resolve(prof))
