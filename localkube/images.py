"""Container images for the local cluster, built here with buildah and never pulled.

- ``pyrocketmq-base:bookworm``: a Debian bookworm root file system made by ``debootstrap`` from
  Debian's packages (python3, venv, CA certificates), imported as an image. It is the base of the
  project's images when no registry is at hand, and the helper image of local-path-provisioner.
- ``registry.k8s.io/pause:3.10.1``: the pod sandbox, a static binary built from a few lines of Go
  (``tools.PAUSE``), named as the kubelet expects it.
- ``pyrocketmq:<tag>`` and ``pyrocketmq-spark:<tag>``: the repository's own Dockerfiles, built with
  ``buildah bud`` (chroot isolation) on the base above.

Images reach the cluster as docker archives imported into containerd's ``k8s.io`` namespace.
Builds inside buildah reach PyPI and Debian through the host's CA bundle, mounted read-only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from localkube import tools
from localkube.config import HELPER_IMAGE, PAUSE_IMAGE

BASE_IMAGE = HELPER_IMAGE
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
PROJECT_IMAGE = "docker.io/library/pyrocketmq"
SPARK_IMAGE = "docker.io/library/pyrocketmq-spark"
REPO_ROOT = Path(__file__).resolve().parents[1]

Progress = Callable[[str], None]


class ImageError(RuntimeError):
    """A tool is missing or a build step failed; the message says which and shows its output."""


def _run(argv: Sequence[str | Path], *, timeout: float = 1800, cwd: Path | None = None) -> str:
    proc = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout, cwd=cwd,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
        raise ImageError(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n{tail}")
    return proc.stdout


def image_cache() -> Path:
    return tools.cache_root() / "images"


def require(*commands: str) -> None:
    missing = [c for c in commands if shutil.which(c) is None]
    if missing:
        raise ImageError(
            f"missing {', '.join(missing)}: apt-get install buildah debootstrap "
            "(scripts/k8s-up installs them)"
        )


def image_id(name: str) -> str | None:
    proc = subprocess.run(
        ["buildah", "images", "--noheading", "--no-trunc", "--format", "{{.ID}}", name],
        capture_output=True, text=True,
    )  # fmt: skip
    out = proc.stdout.strip().splitlines()
    return out[0] if proc.returncode == 0 and out else None


def _from_scratch(
    name: str, fill: Callable[[Path], None], config: Sequence[str], base: str = "scratch"
) -> None:
    """Commit ``name``: ``base`` with what ``fill`` writes into its mounted root, configured by ``config``."""
    ctr = _run(["buildah", "from", base]).strip()
    try:
        mount = Path(_run(["buildah", "mount", ctr]).strip())
        fill(mount)
        _run(["buildah", "umount", ctr])
        _run(["buildah", "config", *config, ctr])
        _run(["buildah", "commit", "--rm", ctr, name])
    except BaseException:
        subprocess.run(["buildah", "rm", ctr], capture_output=True)
        raise


def ensure_base(progress: Progress = lambda m: None) -> str:
    """The debootstrap base image (built once, kept in buildah's storage)."""
    if image_id(BASE_IMAGE):
        return BASE_IMAGE
    require("buildah", "debootstrap")
    image_cache().mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(dir=image_cache(), prefix="rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        progress(f"debootstrap bookworm ({', '.join(BASE_PACKAGES)}) from {DEBIAN_MIRROR} ...")
        _run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", "bookworm",
             rootfs, DEBIAN_MIRROR],
            timeout=1800,
        )  # fmt: skip
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (rootfs / junk).glob("*"):
                if entry.is_file():
                    entry.unlink()

        def fill(mount: Path) -> None:
            _run(["cp", "-a", f"{rootfs}/.", str(mount)])

        _from_scratch(
            BASE_IMAGE,
            fill,
            ["--cmd", "/bin/bash",
             "--env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "--env", "LANG=C.UTF-8"],
        )  # fmt: skip
    progress(f"base image {BASE_IMAGE} built in {time.monotonic() - t0:.0f} s")
    return BASE_IMAGE


def ensure_pause(progress: Progress = lambda m: None) -> str:
    if image_id(PAUSE_IMAGE):
        return PAUSE_IMAGE
    require("buildah")
    binary = tools.ensure(["pause"], progress=progress) / "pause"

    def fill(mount: Path) -> None:
        shutil.copy2(binary, mount / "pause")

    _from_scratch(PAUSE_IMAGE, fill, ["--entrypoint", '["/pause"]', "--user", "65535:65535"])
    progress(f"pause image {PAUSE_IMAGE} built")
    return PAUSE_IMAGE


def _build_mounts(tmp: Path) -> list[str]:
    """Volumes for ``buildah bud``: the host's CA bundle and a pip config that uses it (pip before 24.2
    trusts only its own bundle), so builds work behind a TLS-inspecting proxy too."""
    bundle = Path(os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt")
    if not bundle.is_file():
        return []
    pip_conf = tmp / "pip.conf"
    pip_conf.write_text("[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")
    return [
        "-v", f"{bundle.resolve()}:/etc/ssl/certs/ca-certificates.crt:ro",
        "-v", f"{pip_conf}:/etc/pip.conf:ro",
    ]  # fmt: skip


def build(
    dockerfile: str,
    name: str,
    build_args: dict[str, str],
    progress: Progress = lambda m: None,
    *,
    background: bool = False,
) -> str:
    """``buildah bud`` a Dockerfile of the repository (its ``<Dockerfile>.dockerignore`` applies).

    No layer cache: buildah's cache key for ``RUN --mount=type=bind,from=<stage>`` ignores what the
    stage produced, so a cached build would ship the previous wheels.
    """
    require("buildah")
    t0 = time.monotonic()
    progress(f"buildah bud -f {dockerfile} -t {name} ...")
    with tempfile.TemporaryDirectory() as tmp:
        argv = [
            *(["nice", "-n", "19"] if background else []),  # yields the CPU to everything else
            "buildah", "bud", "--isolation", "chroot", "--layers=false", "-f", dockerfile,
            "--ignorefile", f"{dockerfile}.dockerignore", "-t", name,
            *_build_mounts(Path(tmp)),
        ]  # fmt: skip
        for key, value in build_args.items():
            argv += ["--build-arg", f"{key}={value}"]
        _run([*argv, "."], cwd=REPO_ROOT, timeout=3600)
    progress(f"{name} built in {time.monotonic() - t0:.0f} s")
    return name


def build_project_images(
    tag: str = "dev", *, spark: bool = True, progress: Progress = lambda m: None, background: bool = False
) -> list[str]:
    base = ensure_base(progress)
    names = [f"{PROJECT_IMAGE}:{tag}"] + ([f"{SPARK_IMAGE}:{tag}"] if spark else [])
    previous = [image_id(name) for name in names]
    built = [build("docker/Dockerfile", names[0], {"BASE_IMAGE": base}, progress, background=background)]
    if spark:
        built.append(
            build("spark/k8s/Dockerfile", names[1], {"BASE_IMAGE": built[0]}, progress, background=background)
        )
    remove_replaced(previous, progress)
    return built


def remove_replaced(previous: Sequence[str | None], progress: Progress = lambda m: None) -> None:
    """Delete the images a rebuild untagged (each build leaves ~1.7 GB otherwise, until the disk fills).

    ``previous`` lists parents before children; children go first, since buildah keeps a parent
    that another image still builds on. An image still tagged (or used by a container) stays.
    """
    for iid in reversed([i for i in previous if i]):
        if _tags(iid):
            continue
        done = subprocess.run(["buildah", "rmi", iid], capture_output=True, text=True)
        if done.returncode == 0:
            progress(f"removed the replaced image {iid.removeprefix('sha256:')[:12]}")
        else:
            progress(
                f"kept the replaced image {iid.removeprefix('sha256:')[:12]}: {done.stderr.strip()[-200:]}"
            )


def _tags(iid: str) -> list[str]:
    """The names an image still carries (none once a rebuild moved its tag)."""
    listing = _run(
        ["buildah", "images", "--noheading", "--no-trunc", "--format", "{{.ID}} {{.Name}}:{{.Tag}}"]
    )
    short = iid.removeprefix("sha256:")
    return [
        name
        for line in listing.splitlines()
        if line.strip()
        for got, name in [line.split(None, 1)]
        if got.removeprefix("sha256:") == short and not name.startswith("<none>")
    ]


def _archive(name: str) -> Path:
    """The image as a docker archive, exported once per image id and cached."""
    iid = image_id(name)
    if iid is None:
        raise ImageError(f"image {name} is not in buildah's storage; build it first (scripts/build-image)")
    key = hashlib.sha256(f"{name}@{iid}".encode()).hexdigest()[:16]
    stem = name.rsplit("/", 1)[-1].replace(":", "_")
    archive = image_cache() / f"{stem}-{key}.tar"
    if not archive.is_file():
        for old in image_cache().glob(f"{stem}-*.tar"):
            old.unlink()
        partial = archive.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        _run(["buildah", "push", name, f"docker-archive:{partial}:{name}"], timeout=1800)
        partial.rename(archive)
    return archive


CONNECT_TIMEOUT_S = 120
IMPORT_ATTEMPTS = 3


def import_into_containerd(
    names: Sequence[str], sockets: Sequence[Path], progress: Progress = lambda m: None
) -> None:
    """Import each image into the ``k8s.io`` namespace of every containerd in ``sockets`` (one per
    node, in parallel), from a docker archive exported once."""
    require("buildah", "ctr")
    image_cache().mkdir(parents=True, exist_ok=True)
    archives = [(name, _archive(name)) for name in names]

    def one(socket: Path) -> None:
        for name, archive in archives:
            t0 = time.monotonic()
            # A runtime unpacking at the smallest CPU share beside a busy machine can take longer than
            # ctr's 10 s default to answer a connection (a cold CI run saw it): wait for it longer, and
            # try again when it still did not answer.
            ctr = [
                "ctr",
                "--address",
                str(socket),
                "--connect-timeout",
                f"{CONNECT_TIMEOUT_S}s",
                "-n",
                "k8s.io",
            ]
            for attempt in range(1, IMPORT_ATTEMPTS + 1):
                try:
                    _run([*ctr, "images", "import", "--snapshotter", "overlayfs", archive], timeout=1800)
                    break
                except ImageError as exc:
                    if "failed to dial" not in str(exc) or attempt == IMPORT_ATTEMPTS:
                        raise
                    progress(f"containerd at {socket} did not answer (attempt {attempt}); trying again")
            where = f" ({socket.parent.parent.name})" if len(sockets) > 1 else ""
            progress(f"imported {name} into containerd{where} in {time.monotonic() - t0:.0f} s")

    with ThreadPoolExecutor(max_workers=max(1, len(sockets))) as pool:
        list(pool.map(one, sockets))  # the first failure is raised here


def main(argv: list[str]) -> int:
    """``scripts/build-image [--tag TAG] [--no-spark] [--no-import]``."""
    import argparse

    from localkube import worker
    from localkube.node import layout_from_env

    parser = argparse.ArgumentParser(
        prog="scripts/build-image",
        description="Build the pyrocketmq and pyrocketmq-spark images with buildah and import them "
        "into the local cluster's containerd (when scripts/k8s-up runs one).",
    )
    parser.add_argument("--tag", default="dev", help="image tag (default: dev)")
    parser.add_argument("--no-spark", action="store_true", help="build only the pyrocketmq image")
    parser.add_argument("--no-import", action="store_true", help="do not import into the local cluster")
    args = parser.parse_args(argv)

    def say(msg: str) -> None:
        print(f"[build-image] {msg}", file=sys.stderr, flush=True)

    try:
        built = build_project_images(args.tag, spark=not args.no_spark, progress=say)
        if not args.no_import and not worker.import_images(layout_from_env(), built, say):
            say("no local cluster is running (scripts/k8s-up): images left in buildah's storage only")
    except (ImageError, tools.PrerequisiteMissing) as exc:
        say(f"error: {exc}")
        return 1
    for name in built:
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
