"""Rolling a Broker's pod template one group at a time: the partition of each group's StatefulSet."""

from __future__ import annotations

import pytest

from pyrocketmq.operator.plan import GroupRollFacts as G, rollout_partitions

CHANGED = {"template_changed": True}
HELD = {"released": False, "rolled_out": False}
ROLLING = {"rolled_out": False, "all_ready": False}


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        # Nothing to do: every group settled.
        ([G(0), G(1)], {0: 0, 1: 0}),
        # New groups are created at once (not a roll), settled ones are left alone.
        ([G(0), G(1, exists=False), G(2, exists=False)], {0: 0, 1: 0, 2: 0}),
        # A template change reaches every group: the first rolls, the others wait.
        ([G(0, **CHANGED), G(1, **CHANGED), G(2, **CHANGED)], {0: 0, 1: 3, 2: 3}),
        # Group 0 is rolling: 1 and 2 keep waiting.
        ([G(0, **ROLLING), G(1, **HELD), G(2, **HELD)], {0: 0, 1: 3, 2: 3}),
        # Group 0 rolled out but a replica is not Ready yet: still rolling.
        ([G(0, all_ready=False), G(1, **HELD)], {0: 0, 1: 3}),
        # Group 0 done: the next pending group is released.
        ([G(0), G(1, **HELD), G(2, **HELD)], {0: 0, 1: 0, 2: 3}),
        # A held group that is rolled out and Ready (the change was reverted) counts as settled.
        ([G(0, released=False), G(1, **HELD)], {0: 0, 1: 0}),
        # A pending group with a replica down goes first (the change may be its fix).
        (
            [G(0, **CHANGED), G(1, template_changed=True, all_ready=False), G(2, **CHANGED)],
            {0: 3, 1: 0, 2: 3},
        ),
        # A second change while group 1 rolls: 1 counts as pending again, but 0 is settled and 1 is
        # the first pending, so 1 goes on and 2 waits.
        (
            [G(0), G(1, template_changed=True, rolled_out=False, all_ready=False), G(2, **HELD)],
            {0: 0, 1: 0, 2: 3},
        ),
        # Two groups released at once (an operator before this rule): both finish, the rest wait.
        ([G(0, **ROLLING), G(1, **ROLLING), G(2, **CHANGED)], {0: 0, 1: 0, 2: 3}),
        # A single group rolls at once.
        ([G(0, **CHANGED)], {0: 0}),
    ],
)
def test_partitions(facts: list[G], expected: dict[int, int]) -> None:
    assert rollout_partitions(facts, 3) == expected


def test_at_most_one_group_replaces_pods_when_none_was_rolling() -> None:
    for n in range(1, 6):
        for broken in range(n):
            facts = [G(i, template_changed=True, all_ready=i != broken) for i in range(n)]
            released = [i for i, p in rollout_partitions(facts, 2).items() if p == 0]
            assert released == [broken]
