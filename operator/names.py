"""Names and ports derived from a resource, so every module of the operator agrees on them. Pure.

==========================  ==============================================================
object                      name
==========================  ==============================================================
name server StatefulSet     ``<ns>``, pods ``<ns>-<i>``, headless Service ``<ns>-headless``
name server DNS names       ``<ns>-<i>.<ns>-headless.<namespace>.svc:9876``
broker group ``g``          brokerName = StatefulSet = ``<broker>-<g>``, pods ``<broker>-<g>-<ordinal>``
group objects               ``<broker>-<g>-headless`` (Service), ``<broker>-<g>-config`` (ConfigMap),
                            ``<broker>-<g>`` (PodDisruptionBudget)
cluster objects             ``<broker>-broker`` (Service, ServiceAccount)
==========================  ==============================================================
"""

from __future__ import annotations

from pyrocketmq.remoting.names import DEFAULT_BROKER_PORT, DEFAULT_NAMESRV_PORT

NAMESRV_PORT = DEFAULT_NAMESRV_PORT
BROKER_PORT = DEFAULT_BROKER_PORT
BROKER_FAST_PORT = BROKER_PORT - 2  # the "VIP channel" RocketMQ clients may use
BROKER_HA_PORT = BROKER_PORT + 1


def broker_group_name(broker: str, index: int) -> str:
    return f"{broker}-{index}"


def group_index(broker: str, group_name: str) -> int | None:
    """The index of ``group_name`` in Broker ``broker`` (``None`` when it is not one of its groups)."""
    prefix = f"{broker}-"
    if not group_name.startswith(prefix):
        return None
    tail = group_name[len(prefix) :]
    return int(tail) if tail.isdigit() else None


def headless_service_name(statefulset: str) -> str:
    return f"{statefulset}-headless"


def master_service_name(group: str) -> str:
    """spec.failover.masterService: the Service that follows ``group``'s elected master."""
    return f"{group}-master"


def service_domain(namespace: str, cluster_domain: str = "") -> str:
    """``<namespace>.svc`` (resolved through the pods' DNS search path) or, with a cluster domain,
    the fully qualified ``<namespace>.svc.<domain>``."""
    return f"{namespace}.svc.{cluster_domain}" if cluster_domain else f"{namespace}.svc"


def namesrv_addresses(name: str, namespace: str, replicas: int, cluster_domain: str = "") -> list[str]:
    """The stable DNS name and port of every pod of NameServer ``name``.

    >>> namesrv_addresses("ns", "prod", 2)
    ['ns-0.ns-headless.prod.svc:9876', 'ns-1.ns-headless.prod.svc:9876']
    """
    domain = service_domain(namespace, cluster_domain)
    return [f"{name}-{i}.{headless_service_name(name)}.{domain}:{NAMESRV_PORT}" for i in range(replicas)]
