"""The committed protobuf modules are what scripts/gen-proxy-pb makes of the committed .proto files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]


def test_generated_modules_match_the_protos(tmp_path):
    subprocess.run(["bash", str(REPO / "scripts" / "gen-proxy-pb"), str(tmp_path)], check=True,
                   env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    committed = REPO / "broker" / "proxy" / "pb"
    for name in ("definition_pb2.py", "definition_pb2.pyi", "service_pb2.py", "service_pb2.pyi"):
        assert (tmp_path / name).read_text() == (committed / name).read_text(), (
            f"{name}: run scripts/gen-proxy-pb"
        )


def test_the_service_has_the_rpcs_of_the_5x_clients():
    from pyrocketmq.broker.proxy.pb import service_pb2

    methods = {m.name for m in service_pb2.DESCRIPTOR.services_by_name["MessagingService"].methods}
    assert {"QueryRoute", "Heartbeat", "SendMessage", "QueryAssignment", "ReceiveMessage", "AckMessage",
            "ForwardMessageToDeadLetterQueue", "EndTransaction", "Telemetry", "NotifyClientTermination",
            "ChangeInvisibleDuration"} <= methods
    assert service_pb2.DESCRIPTOR.package == "apache.rocketmq.v2"
