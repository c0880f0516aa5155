"""Operator models read from resource bodies: spec.resetOffset of a ConsumerGroup."""

from __future__ import annotations

import pytest

from pyrocketmq.operator.model import SpecError

from .conftest import body


def test_reset_offset_spec():
    from pyrocketmq.operator.model import ConsumerGroupModel, OffsetReset, reset_timestamp

    assert (reset_timestamp("earliest"), reset_timestamp("LATEST"), reset_timestamp("1700000000000")) == (
        0,
        -1,
        1700000000000,
    )
    assert reset_timestamp("2023-11-14T22:13:20Z") == 1700000000000
    assert reset_timestamp("2023-11-14T23:13:20+01:00") == 1700000000000
    for bad in ("yesterday", "2023-11-14T22:13:20"):
        with pytest.raises(SpecError, match="spec.resetOffset.to"):
            reset_timestamp(bad)
    model = ConsumerGroupModel.from_body(body("ConsumerGroup", clusterRef={"name": "b"},
                                              resetOffset={"id": "r1", "topic": "Orders", "to": "earliest"}))
    assert model.reset_offset == OffsetReset("r1", "Orders", "earliest", 0)
    assert ConsumerGroupModel.from_body(body("ConsumerGroup", clusterRef={"name": "b"})).reset_offset is None
    with pytest.raises(SpecError, match="spec.resetOffset.topic"):
        ConsumerGroupModel.from_body(
            body("ConsumerGroup", clusterRef={"name": "b"}, resetOffset={"id": "r", "to": "latest"})
        )
