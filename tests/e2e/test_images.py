"""A rebuild deletes the images it replaced: every e2e run rebuilds both project images (~1.7 GB),
and before this the untagged ones piled up in buildah's storage until the disk passed the brokers'
90 % full mark and they refused sends."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

from localkube import images as lk_images
from tests.e2e.conftest import E2EImages
from tests.k8s.cluster import KubeCluster


def _image(name: str, content: str, parent: str | None = None) -> str:
    """Commit a one-file image, on ``parent`` when given; return its id."""

    def fill(root: Path) -> None:
        (root / f"layer-{uuid.uuid4().hex[:6]}").write_text(content)

    lk_images._from_scratch(name, fill, [], base=parent or "scratch")
    iid = lk_images.image_id(name)
    assert iid is not None
    return iid


def _exists(iid: str) -> bool:
    return subprocess.run(["buildah", "inspect", "--type", "image", iid], capture_output=True).returncode == 0


def test_a_rebuild_removes_the_images_it_replaced(node_cluster: KubeCluster) -> None:
    suffix = uuid.uuid4().hex[:8]
    parent, child, kept = (f"localhost/cleanup-{part}-{suffix}:t" for part in ("parent", "child", "kept"))
    made: list[str] = []
    try:
        old_parent = _image(parent, "one")
        old_child = _image(child, "one", parent=parent)
        made += [old_parent, old_child]
        subprocess.run(["buildah", "tag", old_parent, kept], check=True, capture_output=True)
        new_parent = _image(parent, "two")
        new_child = _image(child, "two", parent=parent)
        made += [new_parent, new_child]
        lk_images.remove_replaced([old_child, old_parent])  # wrong order on purpose: still removable
        assert not _exists(old_child), "the replaced child image was left behind"
        assert _exists(old_parent), "an image still tagged (here as 'kept') must stay"
        subprocess.run(["buildah", "rmi", kept], check=True, capture_output=True)
        lk_images.remove_replaced([old_parent, old_child])
        assert not _exists(old_parent), "the replaced parent image was left behind"
        assert _exists(new_parent) and _exists(new_child), "the current images must stay"
    finally:
        for name in (child, parent, kept):
            subprocess.run(["buildah", "rmi", name], capture_output=True)
        for iid in reversed(made):
            subprocess.run(["buildah", "rmi", iid], capture_output=True)


def test_the_project_image_carries_the_compiled_store_path(images: E2EImages) -> None:
    """The build stage compiles broker/store/_native.c and remoting/_frames.c (gcc and Python's headers
    come from apt there), so brokers on pods run the compiled paths, not the pure-Python fallbacks."""
    ctr = subprocess.run(
        ["buildah", "from", images.project], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        mount = Path(
            subprocess.run(
                ["buildah", "mount", ctr], check=True, capture_output=True, text=True
            ).stdout.strip()
        )
        found = sorted(
            mount.glob("opt/pyrocketmq/lib/python3*/site-packages/pyrocketmq/broker/store/_native*.so")
        )
        assert found, (
            "no compiled pyrocketmq/broker/store/_native*.so in the image: "
            "pods would run the pure-Python path"
        )
        site = "opt/pyrocketmq/lib/python3*/site-packages/pyrocketmq"
        assert sorted(mount.glob(f"{site}/remoting/_frames*.so")), (
            "no compiled pyrocketmq/remoting/_frames*.so in the image: "
            "pods would decode frames in pure Python"
        )
        assert not list(mount.glob("usr/bin/gcc*")), "the compiler belongs to the build stage only"
    finally:
        subprocess.run(["buildah", "umount", ctr], capture_output=True)
        subprocess.run(["buildah", "rm", ctr], capture_output=True)
