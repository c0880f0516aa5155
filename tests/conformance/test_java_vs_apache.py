"""Harness sanity check: the Java round trip against Apache RocketMQ itself must pass.

If this fails, the harness (or the machine) is broken, not pyrocketmq.
"""

import pytest

from tests.conformance.scenario import run_java_roundtrip

pytestmark = pytest.mark.conformance


def test_java_roundtrip(apache_cluster, java):
    run_java_roundtrip(apache_cluster, java)
