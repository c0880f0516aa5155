"""A short chaos schedule (tests/e2e/chaos.py): producers on a plain and an orderly topic through
faults drawn from a fixed seed, one at a time; nothing acknowledged is lost and no sharding key's
messages are stored out of order (duplicates are allowed and counted); the Apache RocketMQ 4.9 Java
producer sends beside ours. ``python -m bench chaos`` runs a long schedule."""

from __future__ import annotations

import os

import pytest

from tests.e2e.chaos import KINDS, run
from tests.e2e.helpers import MQ, mq_fixture

pytestmark = pytest.mark.node_faults  # runs while no other e2e module runs

FAULTS = int(os.environ.get("PYROCKETMQ_CHAOS_FAULTS", "3"))
SEED = int(os.environ.get("PYROCKETMQ_CHAOS_SEED", "7"))
KIND_LIST = [k for k in os.environ.get("PYROCKETMQ_CHAOS_KINDS", ",".join(KINDS)).split(",") if k]
JAVA = os.environ.get("PYROCKETMQ_CHAOS_JAVA", "1") == "1"  # the Apache 4.9 Java producer sends too


# failover by default; the master registers the Service that follows it, so the Java client's route
# stays right through every fault (it refreshes routes only every 30 s)
mq = mq_fixture("chaos", wait=True, names=3, groups=1, failover={"masterService": True})


@pytest.mark.timeout(600 + 240 * FAULTS)
def test_a_seeded_fault_schedule_loses_nothing_acknowledged_and_keeps_each_keys_order(mq: MQ) -> None:
    result = run(mq, FAULTS, SEED, KIND_LIST, hold=10.0, java=JAVA)
    out = os.environ.get("PYROCKETMQ_CHAOS_JSON")
    if out:
        import json

        with open(out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    for topic, v in result["verdicts"].items():
        assert v["lost"] == 0, f"{topic}: {v['lost']} acknowledged messages lost: {v['missing']}"
        assert v["reordered"] == 0, f"{topic}: {v['reordered']} messages out of their key's order"
        assert v["acknowledged"] > 100, f"{topic}: only {v['acknowledged']} sends acknowledged"
    assert len(result["faults"]) == FAULTS
