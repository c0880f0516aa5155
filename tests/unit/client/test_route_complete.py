"""A route is complete when every broker holding the topic's queues has a master in it."""

from __future__ import annotations

from pyrocketmq.client.instance import _complete
from pyrocketmq.remoting.body import BrokerData, QueueData, TopicRouteData


def route(queues: list[str], brokers: dict[str, dict[int, str]]) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData(broker_name=n, read_queue_nums=4, write_queue_nums=4) for n in queues],
        broker_datas=[BrokerData(cluster="c", broker_name=n, broker_addrs=a) for n, a in brokers.items()],
    )


def test_complete_routes():
    assert _complete(route(["a"], {"a": {0: "x:1"}}))
    assert not _complete(route(["a"], {}))  # queues of a broker the name server dropped
    assert not _complete(route(["a", "b"], {"a": {0: "x:1"}, "b": {1: "y:1"}}))  # b has only a slave
    assert not _complete(route([], {}))
