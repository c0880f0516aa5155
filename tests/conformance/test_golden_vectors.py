"""The committed golden vectors (tests/unit/golden/) are exactly what RocketMQ's Java classes produce."""

import pytest

from tests.conformance import gen_golden

pytestmark = pytest.mark.conformance


def test_golden_vectors_are_reproducible(java, tmp_path):
    gen_golden.generate(tmp_path)
    diffs = gen_golden.check(tmp_path)
    assert not diffs, (
        f"tests/unit/golden differs from a fresh run of GoldenVectors.java: {diffs} "
        f"(zlib-dependent: {sorted(set(diffs) & gen_golden.ZLIB_DEPENDENT)}); "
        "regenerate with `.venv/bin/python tests/conformance/gen_golden.py` if the change is intended"
    )
