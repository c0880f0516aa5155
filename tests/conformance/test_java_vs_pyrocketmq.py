"""The Java round trip (unmodified Apache RocketMQ 4.9.8 client and tools) against pyrocketmq's servers.

Same scenario as ``test_java_vs_apache.py``: whatever Apache RocketMQ does there, we must do too.
"""

import pytest

from tests.conformance.scenario import run_java_roundtrip

pytestmark = pytest.mark.conformance


def test_java_roundtrip(pyrocketmq_cluster, java):
    run_java_roundtrip(pyrocketmq_cluster, java)
