"""Run Apache RocketMQ 5 (5.2.0 jars): a name server and the proxy in local mode, whose process also
runs the broker (``ProxyStartup -pm local``), the way a 5.x user runs a single-process broker with the
gRPC endpoint. The 5.x peer of the benchmarks.

Like ``apache.py``: ``java -cp`` on the cached jars, ``-Duser.home``/``-Drocketmq.home.dir`` under the
given home (the 5.x servers log under ``user.home/logs``), the JDK 17 module flags (5.x also needs
``sun.nio.ch`` exported).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.conformance import jvm, maven, probe
from tests.conformance.apache import NAMESRV_MAIN, SERVER_HEAP, apache_broker_conf, boot_namesrv
from tests.helpers.cluster import (
    Cluster,
    ManagedProcess,
    free_broker_port,
    free_port,
    wait_for_tcp,
    write_properties,
)

PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"
JDK17_FLAGS = jvm.SERVER5_JDK17_FLAGS


def start_apache5_cluster(
    home: Path,
    *,
    timeout: float = 120.0,
    broker_overrides: Mapping[str, object] | None = None,
    broker_heap: Sequence[str] = SERVER_HEAP,
) -> tuple[Cluster, str]:
    """Name server + proxy (local mode, broker inside) under ``home``; ``(cluster, gRPC endpoint)``
    once TBW102 has a route and the gRPC port accepts."""
    lib = maven.resolve(maven.SERVER5)
    java = jvm.java_executable()
    conf_dir = home / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    ns_port, broker_port, grpc_port, remoting_port = free_port(), free_broker_port(), free_port(), free_port()
    namesrv_addr = f"127.0.0.1:{ns_port}"
    ns_conf = write_properties(conf_dir / "namesrv.conf", {"listenPort": ns_port})
    broker_values = {**apache_broker_conf(namesrv_addr, broker_port, home), **dict(broker_overrides or {})}
    broker_conf = write_properties(conf_dir / "broker.conf", broker_values)
    proxy_conf = conf_dir / "rmq-proxy.json"
    proxy_conf.write_text(json.dumps({
        "rocketMQClusterName": broker_values["brokerClusterName"], "namesrvAddr": namesrv_addr,
        "grpcServerPort": grpc_port, "remotingListenPort": remoting_port,
    }))
    common = [*JDK17_FLAGS, f"-Drocketmq.home.dir={home}", f"-Duser.home={home}", "-Dfile.encoding=UTF-8",
              "-cp", maven.classpath(lib)]
    namesrv = ManagedProcess(
        "apache5-namesrv",
        [java, *SERVER_HEAP, *common, NAMESRV_MAIN, "-c", str(ns_conf)],
        home / "namesrv.log",
        cwd=home,
    )
    broker = ManagedProcess(
        "apache5-broker",  # the proxy's process, which runs the broker
        [
            java,
            *broker_heap,
            *common,
            PROXY_MAIN,
            "-pm",
            "local",
            "-pc",
            str(proxy_conf),
            "-bc",
            str(broker_conf),
            "-n",
            namesrv_addr,
        ],
        home / "broker.log",
        cwd=home,
    )
    cluster = Cluster("apache5", namesrv_addr, f"127.0.0.1:{broker_port}", str(broker_values["brokerName"]),
                      str(broker_values["brokerClusterName"]), home, [namesrv])
    try:
        boot_namesrv(namesrv, ns_port, timeout)
        cluster.processes.append(broker.start())
        broker.wait_for_log("startup successfully", timeout)
        wait_for_tcp("127.0.0.1", grpc_port, timeout, broker.alive)
        probe.wait_for_route(namesrv_addr, "TBW102", timeout, alive=cluster.alive)
    except BaseException as exc:
        raise cluster.failed_to_start("Apache RocketMQ 5", exc) from exc
    return cluster, f"127.0.0.1:{grpc_port}"
