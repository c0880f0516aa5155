"""Build the Kubernetes binaries the local cluster runs, from the Go module proxy, into a cache outside the
repo.

What gets built (pinned below), each with ``go build -trimpath -ldflags "-s -w ..."``:

    kube-apiserver, kube-controller-manager, kubectl,
    kube-scheduler, kubelet, kube-proxy                k8s.io/kubernetes  K8S_VERSION
    etcd                                               go.etcd.io/etcd/server/v3  ETCD_VERSION
    helm                                               helm.sh/helm/v3  HELM_VERSION
    coredns (kubernetes, cache, health ... only)       github.com/coredns/coredns  COREDNS_VERSION
    local-path-provisioner                             github.com/rancher/local-path-provisioner
    pause (the pod sandbox process)                    a few lines of Go kept here
    prometheus (on demand, not part of the node;       github.com/prometheus/prometheus  PROMETHEUS_VERSION
      Kubernetes service discovery only)

``k8s.io/kubernetes`` cannot be ``go install``-ed: its go.mod replaces the ``k8s.io/*`` staging modules
with ``./staging/...`` paths that are not in the module zip. So each tool gets a small wrapper module
that requires it; the kubernetes wrapper ``replace``-s every staging module (read from the upstream
go.mod) with its published ``v0.Y.Z``. etcd and helm get their own wrappers, so each is built against
the dependency set its own go.mod names, not a merged one.

Layout (``PYROCKETMQ_CACHE``, default ``~/.cache/pyrocketmq``)::

    <cache>/k8s/gomod/                 GOMODCACHE (shared by all versions)
    <cache>/k8s/gocache/               GOCACHE    (shared by all versions)
    <cache>/k8s/<K8S_VERSION>/src/<w>/ wrapper modules (go.mod/go.sum; safe to delete)
    <cache>/k8s/<K8S_VERSION>/bin/     the binaries
    <cache>/k8s/<K8S_VERSION>/bin/.<name>.built   marker, written after the binary: recipe digest + timing
    <cache>/k8s/<K8S_VERSION>/build.log           output of every go command run

Idempotent and safe for parallel pytest workers: an exclusive ``flock`` on ``.build.lock``, markers
re-checked under the lock, binaries linked to a temporary name and renamed into place. Only a build
needs Go (>= 1.26, ``GOTOOLCHAIN=local``: it never downloads a toolchain); a warm cache needs nothing.

Manual use (e.g. a CI step that warms the cache)::

    python3 -m localkube.tools            # build whatever the node lacks, print the bin dir
    python3 -m localkube.tools --all      # the same, and prometheus
    python3 -m localkube.tools --force    # rebuild everything (keeps the module/build caches)
    python3 -m localkube.tools --prune    # build, then drop GOMODCACHE/GOCACHE (~5 GB; keeps bin/)

``PYROCKETMQ_GO`` names the go command to use (default: ``go`` on PATH, else /usr/local/go/bin/go).

This module is standard library only and imports nothing from pyrocketmq.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

K8S_VERSION = "v1.36.1"  # k8s.io/kubernetes; staging modules at v0.36.1. Needs Go >= 1.26.0.
ETCD_VERSION = "v3.6.8"  # the etcd client/server version k8s.io/kubernetes v1.36.1's go.mod pins
HELM_VERSION = "v3.21.4"  # built against k8s.io/client-go v0.36.2
COREDNS_VERSION = "v1.14.7"
LOCAL_PATH_VERSION = "v0.0.30"
# Prometheus publishes its Go module as v0.<3.x minor>.<patch>. Built here, rather than taken from
# Debian, because Debian's package leaves out the Kubernetes service discovery the chart's scrape
# configs use.
PROMETHEUS_VERSION = "v0.316.0"
MIN_GO = (1, 26)

# Version stamps the upstream release builds set with -X (read from the proxy's .info of each tag).
_K8S_COMMIT = "756939600b9a7180fc2df6550a4585b638875e67"
_K8S_DATE = "2026-05-12T09:51:33Z"
_HELM_COMMIT = "813176c51bb5c181dbbd7901298ddcc104cd3417"

Progress = Callable[[str], None]


class PrerequisiteMissing(RuntimeError):
    """Go, the module proxy or a build step is not available; the caller decides between skip and fail."""


@dataclass(frozen=True, slots=True)
class Wrapper:
    """A throwaway main module whose only job is to require ``module@version``."""

    name: str  # directory under src/
    module: str
    version: str
    staging: bool = False  # replace k8s.io/* staging modules (k8s.io/kubernetes only)
    main_go: str = ""  # a main package of our own, written into the wrapper (its package is ".")


@dataclass(frozen=True, slots=True)
class Tool:
    name: str  # binary name
    wrapper: Wrapper
    package: str
    ldflags: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # go build -tags


KUBERNETES = Wrapper("kubernetes", "k8s.io/kubernetes", K8S_VERSION, staging=True)
ETCD = Wrapper("etcd", "go.etcd.io/etcd/server/v3", ETCD_VERSION)
HELM = Wrapper("helm", "helm.sh/helm/v3", HELM_VERSION)

# CoreDNS with only the plugins the local cluster's Corefile uses (no forward: it answers
# cluster.local and nothing else). The directive order is CoreDNS's plugin.cfg order.
_COREDNS_MAIN = """package main

import (
\t"github.com/coredns/coredns/core/dnsserver"
\t"github.com/coredns/coredns/coremain"

\t_ "github.com/coredns/coredns/plugin/bind"
\t_ "github.com/coredns/coredns/plugin/cache"
\t_ "github.com/coredns/coredns/plugin/errors"
\t_ "github.com/coredns/coredns/plugin/health"
\t_ "github.com/coredns/coredns/plugin/kubernetes"
\t_ "github.com/coredns/coredns/plugin/log"
\t_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
\tdnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "cache", "kubernetes"}
}

func main() { coremain.Run() }
"""
COREDNS = Wrapper("coredns", "github.com/coredns/coredns", COREDNS_VERSION, main_go=_COREDNS_MAIN)
LOCAL_PATH = Wrapper(
    "local-path-provisioner", "github.com/rancher/local-path-provisioner", LOCAL_PATH_VERSION
)

# The pod sandbox ("pause") process: PID 1 of every pod, holding its namespaces. It reaps
# orphans and exits on SIGINT/SIGTERM, as the upstream pause does.
_PAUSE_MAIN = """package main

import (
\t"os"
\t"os/signal"
\t"syscall"
)

func main() {
\tsigs := make(chan os.Signal, 4)
\tsignal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
\tfor sig := range sigs {
\t\tif sig == syscall.SIGCHLD {
\t\t\tfor {
\t\t\t\tvar ws syscall.WaitStatus
\t\t\t\tif pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 {
\t\t\t\t\tbreak
\t\t\t\t}
\t\t\t}
\t\t\tcontinue
\t\t}
\t\tos.Exit(0)
\t}
}
"""
PAUSE = Wrapper("pause", "", "", main_go=_PAUSE_MAIN)
PROMETHEUS = Wrapper("prometheus", "github.com/prometheus/prometheus", PROMETHEUS_VERSION)


def _k8s_version_flags() -> tuple[str, ...]:
    major, minor, _ = K8S_VERSION.lstrip("v").split(".")
    values = {
        "gitVersion": K8S_VERSION,
        "gitMajor": major,
        "gitMinor": minor,
        "gitCommit": _K8S_COMMIT,
        "gitTreeState": "clean",
        "buildDate": _K8S_DATE,
    }
    return tuple(
        f"-X {pkg}.{key}={val}"
        for pkg in ("k8s.io/client-go/pkg/version", "k8s.io/component-base/version")
        for key, val in values.items()
    )


def _helm_version_flags() -> tuple[str, ...]:
    # As helm's Makefile: the default "cluster" version helm templates against (.Capabilities.KubeVersion)
    # is derived from the client-go it was built with (v0.36 -> 1.36).
    major, minor = "1", K8S_VERSION.lstrip("v").split(".")[1]
    return (
        f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",
        "-X helm.sh/helm/v3/internal/version.metadata=",
        f"-X helm.sh/helm/v3/internal/version.gitCommit={_HELM_COMMIT}",
        "-X helm.sh/helm/v3/internal/version.gitTreeState=clean",
        f"-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor={major}",
        f"-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor={minor}",
        f"-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor={major}",
        f"-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor={minor}",
    )


# Build order: etcd first (small, its own module), then the kubernetes binaries (each reuses the
# packages compiled for the one before), helm last.
TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("etcd", ETCD, "go.etcd.io/etcd/server/v3"),
        Tool("kube-apiserver", KUBERNETES, "k8s.io/kubernetes/cmd/kube-apiserver", _k8s_version_flags()),
        Tool(
            "kube-controller-manager",
            KUBERNETES,
            "k8s.io/kubernetes/cmd/kube-controller-manager",
            _k8s_version_flags(),
        ),
        Tool("kubectl", KUBERNETES, "k8s.io/kubernetes/cmd/kubectl", _k8s_version_flags()),
        Tool("kube-scheduler", KUBERNETES, "k8s.io/kubernetes/cmd/kube-scheduler", _k8s_version_flags()),
        Tool("kubelet", KUBERNETES, "k8s.io/kubernetes/cmd/kubelet", _k8s_version_flags()),
        Tool("kube-proxy", KUBERNETES, "k8s.io/kubernetes/cmd/kube-proxy", _k8s_version_flags()),
        Tool("helm", HELM, "helm.sh/helm/v3/cmd/helm", _helm_version_flags()),
        Tool("coredns", COREDNS, "."),
        Tool("local-path-provisioner", LOCAL_PATH, "github.com/rancher/local-path-provisioner"),
        Tool("pause", PAUSE, "."),
        # Only the Kubernetes service discovery (plus file and static targets, always in): the cloud
        # providers' discovery SDKs are most of a full build's modules and compile time.
        Tool("prometheus", PROMETHEUS, "github.com/prometheus/prometheus/cmd/prometheus",
             tags=("remove_all_sd", "enable_kubernetes_sd")),
    )
}
ALL = tuple(TOOLS)
# What the single-node cluster runs (scripts/k8s-up); prometheus is built when a test asks for it.
NODE = tuple(n for n in TOOLS if n != "prometheus")
# What a control plane on loopback needs (tests/k8s/cluster.py), and what the full node adds.
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl", "helm")


def cache_root() -> Path:
    root = os.environ.get("PYROCKETMQ_CACHE") or os.path.join(Path.home(), ".cache", "pyrocketmq")
    return Path(root).expanduser()


def k8s_cache() -> Path:
    return cache_root() / "k8s"


def version_dir() -> Path:
    return k8s_cache() / K8S_VERSION


def bin_dir() -> Path:
    return version_dir() / "bin"


def binary(name: str) -> Path:
    return bin_dir() / name


def _marker(name: str) -> Path:
    return bin_dir() / f".{name}.built"


def _recipe_digest(tool: Tool) -> str:
    """Changes whenever what we would build for ``tool`` changes (so a new pin rebuilds just that tool)."""
    recipe = {
        "module": tool.wrapper.module,
        "version": tool.wrapper.version,
        "staging": tool.wrapper.staging,
        "main_go": tool.wrapper.main_go,
        "package": tool.package,
        "ldflags": list(tool.ldflags),
        "tags": list(tool.tags),
        "flags": _BUILD_FLAGS,
        "recipe": 1,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def is_built(name: str) -> bool:
    marker, path = _marker(name), binary(name)
    if not marker.is_file() or not path.is_file() or not os.access(path, os.X_OK):
        return False
    return marker.read_text().split("\n", 1)[0].strip() == _recipe_digest(TOOLS[name])


@contextmanager
def file_lock(path: Path):
    """An exclusive advisory lock held for the ``with`` block (blocks other processes, not threads)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


_BUILD_FLAGS = ["-trimpath", "-p", "2"]


def find_go() -> str:
    """The ``go`` command to build with: ``$PYROCKETMQ_GO``, ``go`` on PATH, or /usr/local/go/bin/go."""
    chosen = os.environ.get("PYROCKETMQ_GO")
    if chosen:
        if os.access(chosen, os.X_OK):
            return chosen
        raise PrerequisiteMissing(f"PYROCKETMQ_GO={chosen} is not an executable")
    for cand in (shutil.which("go"), "/usr/local/go/bin/go"):
        if cand and os.access(cand, os.X_OK):
            return cand
    raise PrerequisiteMissing("no Go toolchain: put `go` (>= 1.26) on PATH or set PYROCKETMQ_GO")


def _go_env(go: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GOMODCACHE=str(k8s_cache() / "gomod"),
        GOCACHE=str(k8s_cache() / "gocache"),
        GOPATH=str(k8s_cache() / "gopath"),  # never ~/go
        GOFLAGS="-mod=mod -buildvcs=false",
        GOTOOLCHAIN="local",  # never download a toolchain: a too-old Go is a clear error instead
        GOWORK="off",
        CGO_ENABLED="0",  # static binaries, no C compiler needed (as the upstream release builds)
        GOTELEMETRY="off",
        # The compiler's own garbage collector spends less CPU with more room (a cold build of the
        # node's binaries is the longest step of a cold test run; memory is not what is short).
        GOGC="400",
    )
    env.setdefault("GOPROXY", "https://proxy.golang.org,direct")
    return env


def _check_go_version(go: str, env: dict[str, str]) -> str:
    try:
        out = subprocess.run([go, "env", "GOVERSION"], env=env, capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise PrerequisiteMissing(f"cannot run {go}: {exc}") from exc
    version = out.stdout.strip()
    m = re.match(r"go(\d+)\.(\d+)", version)
    if out.returncode != 0 or not m:
        raise PrerequisiteMissing(f"`{go} env GOVERSION` failed: {out.stderr.strip() or version}")
    if (int(m.group(1)), int(m.group(2))) < MIN_GO:
        raise PrerequisiteMissing(
            f"{go} is {version}; Kubernetes {K8S_VERSION} needs Go >= {'.'.join(map(str, MIN_GO))}"
        )
    return version


class _Builder:
    def __init__(self, progress: Progress, *, background: bool = False) -> None:
        self.progress = progress
        self.nice = ["nice", "-n", "19"] if background else []  # yields the CPU to everything else
        self.go = find_go()
        self.env = _go_env(self.go)
        version_dir().mkdir(parents=True, exist_ok=True)
        self.log_path = version_dir() / "build.log"
        self.go_version = _check_go_version(self.go, self.env)
        self._prepared: set[str] = set()

    def run(self, args: list[str], cwd: Path, what: str, timeout: float) -> str:
        with open(self.log_path, "a") as log:
            log.write(f"\n$ (cd {cwd} && {' '.join(args)})\n")
            log.flush()
            try:
                proc = subprocess.run(
                    self.nice + args,
                    cwd=cwd,
                    env=self.env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=timeout,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired as exc:
                raise PrerequisiteMissing(
                    f"{what}: did not finish in {timeout:.0f} s (log: {self.log_path})"
                ) from exc
            log.write(proc.stdout)
        if proc.returncode != 0:
            tail = "\n".join(proc.stdout.strip().splitlines()[-25:])
            raise PrerequisiteMissing(
                f"{what} failed (exit {proc.returncode}; log: {self.log_path}):\n{tail}"
            )
        return proc.stdout

    def prepare(self, w: Wrapper) -> Path:
        """Write the wrapper module for ``w`` (go/godebug lines and staging replaces copied from upstream)."""
        src = version_dir() / "src" / w.name
        if w.name in self._prepared:
            return src
        src.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        if not w.module:  # our own main package with no dependencies
            (src / "go.mod").write_text(f"module pyrocketmq.local/k8s-tools/{w.name}\n\ngo 1.26\n")
            (src / "main.go").write_text(w.main_go)
            self._prepared.add(w.name)
            return src
        out = self.run(
            [self.go, "mod", "download", "-json", f"{w.module}@{w.version}"],
            src,
            f"downloading {w.module}@{w.version} from the Go module proxy",
            timeout=1200,
        )
        upstream = Path(json.loads(out)["GoMod"]).read_text()
        lines = [
            f"// Generated by localkube/tools.py to build binaries of {w.module} {w.version}. "
            "Safe to delete.",
            f"module pyrocketmq.local/k8s-tools/{w.name}",
            "",
        ]
        lines += [ln for ln in upstream.splitlines() if re.match(r"(go|godebug)\s", ln)]
        lines += ["", f"require {w.module} {w.version}"]
        if w.staging:
            staged = re.findall(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", upstream, re.M)
            if not staged:
                raise PrerequisiteMissing(f"{w.module}@{w.version}: no staging replaces found in its go.mod")
            staging_version = "v0." + w.version.lstrip("v").split(".", 1)[1]
            lines += ["", "replace ("] + [f"\t{m} => {m} {staging_version}" for m in staged] + [")"]
        text = "\n".join(lines) + "\n"
        gomod = src / "go.mod"
        # Keep what `go build -mod=mod` added (requirements, go.sum) while the header is unchanged.
        if not gomod.is_file() or not gomod.read_text().startswith(text):
            gomod.write_text(text)
            (src / "go.sum").unlink(missing_ok=True)
        if w.main_go:
            (src / "main.go").write_text(w.main_go)
        self.progress(f"  {w.module}@{w.version}: module + go.mod ready in {time.monotonic() - t0:.0f} s")
        self._prepared.add(w.name)
        return src

    def build(self, tool: Tool) -> float:
        src = self.prepare(tool.wrapper)
        target = binary(tool.name)
        tmp = target.with_name(f".{tool.name}.partial")
        ldflags = " ".join(("-s", "-w") + tool.ldflags)
        tags = ["-tags", ",".join(tool.tags)] if tool.tags else []
        t0 = time.monotonic()
        self.run(
            [self.go, "build", *_BUILD_FLAGS, *tags, "-ldflags", ldflags, "-o", str(tmp), tool.package],
            src,
            f"go build {tool.package}",
            timeout=3600,
        )
        elapsed = time.monotonic() - t0
        tmp.chmod(0o755)
        os.replace(tmp, target)
        _marker(tool.name).write_text(
            f"{_recipe_digest(tool)}\n{tool.package}@{tool.wrapper.version} built by {self.go_version} "
            f"in {elapsed:.0f} s at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n"
        )
        return elapsed


def ensure(
    names: Iterable[str] = NODE,
    *,
    progress: Progress | None = None,
    force: bool = False,
    background: bool = False,
) -> Path:
    """Return the bin directory holding ``names``, building the missing ones first (``background``:
    at the lowest CPU priority).

    Raises ``PrerequisiteMissing`` if a build is needed and Go, the proxy or the build fails.
    """
    names = list(names)
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        raise ValueError(f"unknown tools {unknown}; known: {list(TOOLS)}")
    say = progress or (lambda msg: None)
    if not force and all(is_built(n) for n in names):
        return bin_dir()
    with file_lock(version_dir() / ".build.lock"):
        todo = [n for n in TOOLS if n in names and (force or not is_built(n))]
        if not todo:
            return bin_dir()
        bin_dir().mkdir(parents=True, exist_ok=True)
        builder = _Builder(say, background=background)
        say(
            f"building {', '.join(todo)} with {builder.go_version} into {bin_dir()} (log: {builder.log_path})"
        )
        total = time.monotonic()
        for name in todo:
            say(f"  {name}: building ...")
            elapsed = builder.build(TOOLS[name])
            size = binary(name).stat().st_size / 2**20
            say(f"  {name}: built in {elapsed:.0f} s ({size:.0f} MiB)")
        say(f"built {len(todo)} binaries in {time.monotonic() - total:.0f} s")
    return bin_dir()


def prune_build_caches() -> None:
    """Delete GOMODCACHE and GOCACHE (~5 GB after a full build), keeping the binaries.

    For CI caches: only ``bin/`` (~340 MB) is needed to run the tests; a later pin change then
    rebuilds from a cold cache.
    """
    with file_lock(version_dir() / ".build.lock"):
        for name in ("gomod", "gocache", "gopath"):
            path = k8s_cache() / name
            if not path.exists():
                continue
            for root, dirs, _files in os.walk(path):  # the module cache is read-only by design
                for d in dirs:
                    os.chmod(os.path.join(root, d), 0o755)
            shutil.rmtree(path)


def main(argv: list[str]) -> int:
    unknown = set(argv) - {"--force", "--prune", "--all"}
    if unknown:
        print("usage: tools.py [--all] [--force] [--prune]", file=sys.stderr)
        return 2
    names = ALL if "--all" in argv else NODE
    try:
        path = ensure(
            names, progress=lambda msg: print(msg, file=sys.stderr, flush=True), force="--force" in argv
        )
    except PrerequisiteMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if "--prune" in argv:
        prune_build_caches()
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
