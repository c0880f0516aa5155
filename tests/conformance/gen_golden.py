"""Regenerate the golden vectors in ``tests/unit/golden/`` with RocketMQ's own Java classes.

Usage (from the repository root)::

    .venv/bin/python tests/conformance/gen_golden.py          # rewrite tests/unit/golden/
    .venv/bin/python tests/conformance/gen_golden.py --check  # exit 1 if a fresh run differs

``java/GoldenVectors.java`` (run on the rocketmq-client 4.9.8 classpath) writes the ``.bin``/``.json``
files and describes them; this script then records, for every map in a description, the key order
found *in the bytes* (fastjson's / RocketMQ's own HashMap order), so an insertion-ordered encoder fed
the fields in that order can reproduce the bytes exactly. ``README.md`` is written by hand.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.conformance import jvm, maven, probe  # noqa: E402

GOLDEN_DIR = REPO_ROOT / "tests" / "unit" / "golden"
MANIFEST = "vectors.json"
# Bytes produced by zlib: stable for one zlib build, but a different zlib may compress differently.
ZLIB_DEPENDENT = {"msg_compressed.bin", "body_register_broker_compressed.bin"}


def _ordered(mapping: dict[str, Any], order: list[str], what: str) -> dict[str, Any]:
    if set(mapping) != set(order):
        raise ValueError(f"{what}: decoded keys {sorted(mapping)} != keys in the bytes {order}")
    return {k: mapping[k] for k in order}


def _property_order(text: str) -> list[str]:
    keys = []
    for pair in text.split("\x02"):
        if "\x01" in pair:
            key, value = pair.split("\x01", 1)
            if key and value:
                keys.append(key)
    return keys


def _batch_property_orders(data: bytes) -> list[list[str]]:
    orders, pos = [], 0
    while pos < len(data):
        total, _magic, _crc, _flag, body_len = struct.unpack_from(">iiiii", data, pos)
        p = pos + 20 + body_len
        (prop_len,) = struct.unpack_from(">h", data, p)
        orders.append(_property_order(data[p + 2 : p + 2 + prop_len].decode("utf-8")))
        pos += total
    return orders


def _command_ext_order(frame: bytes) -> list[str]:
    (mark,) = struct.unpack_from(">i", frame, 4)
    header = frame[8 : 8 + (mark & 0xFFFFFF)]
    if mark >> 24 == 1:
        return list(probe._decode_rocketmq_header(header)["extFields"])
    parsed = json.loads(header.decode("utf-8"), object_pairs_hook=lambda pairs: pairs)
    for key, value in parsed:
        if key == "extFields":
            return [k for k, _ in value]
    return []


def _json_header_key_order(frame: bytes) -> list[str] | None:
    (mark,) = struct.unpack_from(">i", frame, 4)
    if mark >> 24 != 0:
        return None
    header = frame[8 : 8 + (mark & 0xFFFFFF)]
    return [k for k, _ in json.loads(header.decode("utf-8"), object_pairs_hook=lambda pairs: pairs)]


def postprocess(vectors: list[dict[str, Any]], files: Path) -> list[dict[str, Any]]:
    for v in vectors:
        kind, name = v["kind"], v["name"]
        data = (files / v["file"]).read_bytes() if "file" in v else b""
        if kind == "remoting_command":
            f = v["fields"]
            f["extFields"] = _ordered(f["extFields"], _command_ext_order(data), name)
            order = _json_header_key_order(data)
            if order is not None:
                f["jsonHeaderKeyOrder"] = order
        elif kind == "message_ext":
            f = v["fields"]
            f["properties"] = _ordered(f["properties"], _property_order(f["propertiesString"]), name)
        elif kind == "message_ext_list":
            for i, f in enumerate(v["messages"]):
                f["properties"] = _ordered(
                    f["properties"], _property_order(f["propertiesString"]), f"{name}[{i}]"
                )
        elif kind == "batch_body":
            for i, (f, order) in enumerate(zip(v["messages"], _batch_property_orders(data), strict=True)):
                f["properties"] = _ordered(f["properties"], order, f"{name}[{i}]")
        elif kind == "json_body":
            try:
                v["parsed"] = probe.loads_lenient(data)
            except ValueError:
                v["parsed"] = None  # object keys (ConsumeStats & co.): see the notes
    return vectors


def generate(target: Path) -> None:
    """Run GoldenVectors and write every file plus vectors.json into ``target`` (an empty directory)."""
    programs = jvm.JavaPrograms(maven.resolve(maven.CLIENT))
    programs.compile()
    result = programs.run("GoldenVectors", [str(target)], timeout=120)
    vectors = postprocess(result.json()["vectors"], target)
    manifest = {
        "generator": "tests/conformance/gen_golden.py (java/GoldenVectors.java)",
        "rocketmq": f"rocketmq-client/common/remoting {maven.CLIENT_VERSION} (Maven Central)",
        "vectors": vectors,
    }
    (target / MANIFEST).write_text(
        json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def generated_files(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir() if p.is_file() and p.name != "README.md"}


def check(fresh: Path) -> list[str]:
    """Names of files that differ between a fresh run and the committed golden directory."""
    committed = generated_files(GOLDEN_DIR) if GOLDEN_DIR.is_dir() else set()
    produced = generated_files(fresh)
    diffs = sorted(committed ^ produced)
    for name in sorted(committed & produced):
        if not filecmp.cmp(GOLDEN_DIR / name, fresh / name, shallow=False):
            diffs.append(name)
    return diffs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed files, write nothing"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        fresh = Path(tmp)
        generate(fresh)
        if args.check:
            diffs = check(fresh)
            for name in diffs:
                print(f"differs: {name}" + (" (zlib-dependent)" if name in ZLIB_DEPENDENT else ""))
            return 1 if diffs else 0
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        for stale in generated_files(GOLDEN_DIR) - generated_files(fresh):
            (GOLDEN_DIR / stale).unlink()
        for name in sorted(generated_files(fresh)):
            shutil.copyfile(fresh / name, GOLDEN_DIR / name)
        print(f"wrote {len(generated_files(fresh))} files to {GOLDEN_DIR.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
