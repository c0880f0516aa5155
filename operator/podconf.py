"""The broker pod's entrypoint: derive the broker's identity from the pod, then run the broker.

A broker group is one StatefulSet, so every pod of it mounts the same broker.conf (the master's).
At start this module reads it and writes the pod's own copy:

- ordinal 0 (``<group>-0``) stays the master: ``brokerId=0`` and the rendered master role;
- ordinal ``n > 0`` becomes a slave: ``brokerId=n``, ``brokerRole=SLAVE``;
- ``brokerIP1`` is the pod IP (what the name servers hand to clients);
- with ``enableControllerMode=true`` (automatic failover) no ordinal is the master: every pod is
  replica ``ordinal + 1`` with the rendered master role, and the controller elects which one leads.

Then it replaces itself with ``pyrocketmq broker -c <pod's broker.conf>``. The functions are pure
(conf text in, conf text out) so the rules are unit-tested; only :func:`main` touches the process.

Usage (the image's entrypoint calls it for ``broker``)::

    POD_NAME=orders-0-1 POD_IP=10.1.2.3 python -m pyrocketmq.operator.podconf [--print]
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping

MASTER_ROLES = ("ASYNC_MASTER", "SYNC_MASTER")


class PodConfError(ValueError):
    """The pod's environment does not say who it is."""


def pod_ordinal(pod_name: str) -> int:
    """The StatefulSet ordinal at the end of a pod name.

    >>> pod_ordinal("orders-0-2")
    2
    """
    _, _, tail = pod_name.rpartition("-")
    if not tail.isdigit():
        raise PodConfError(f"pod name {pod_name!r} does not end in a StatefulSet ordinal")
    return int(tail)


def role_for_ordinal(ordinal: int, master_role: str) -> tuple[int, str]:
    """``(brokerId, brokerRole)`` of the pod with ``ordinal`` in a group whose master has ``master_role``.

    >>> role_for_ordinal(0, "SYNC_MASTER"), role_for_ordinal(2, "SYNC_MASTER")
    ((0, 'SYNC_MASTER'), (2, 'SLAVE'))
    """
    if master_role not in MASTER_ROLES:
        raise PodConfError(
            f"brokerRole {master_role!r} in the template: expected ASYNC_MASTER or SYNC_MASTER"
        )
    if ordinal < 0:
        raise PodConfError(f"ordinal {ordinal} is negative")
    return (0, master_role) if ordinal == 0 else (ordinal, "SLAVE")


def _key(line: str) -> str | None:
    stripped = line.strip()
    if not stripped or stripped[0] in "#!":
        return None
    for i, ch in enumerate(stripped):
        if ch in "=:" or ch.isspace():
            return stripped[:i]
    return stripped


def pod_conf(template: str, env: Mapping[str, str]) -> str:
    """The pod's broker.conf: ``template`` with ``brokerId``, ``brokerRole`` and ``brokerIP1`` set (and
    ``accessKey``/``secretKey`` from ``PYROCKETMQ_ACCESS_KEY``/``PYROCKETMQ_SECRET_KEY`` when given).

    Every other line (comments included) is kept as it is.
    """
    pod_name = env.get("POD_NAME", "").strip()
    pod_ip = env.get("POD_IP", "").strip()
    if not pod_name:
        raise PodConfError("POD_NAME is not set (the downward API gives it: fieldRef metadata.name)")
    if not pod_ip:
        raise PodConfError("POD_IP is not set (the downward API gives it: fieldRef status.podIP)")
    lines = template.splitlines()
    master_role = "ASYNC_MASTER"
    controller_mode = False
    for line in lines:
        if _key(line) == "brokerRole":
            master_role = line.split("=", 1)[1].strip() if "=" in line else master_role
        if _key(line) == "enableControllerMode":
            controller_mode = line.split("=", 1)[1].strip().lower() == "true" if "=" in line else False
    broker_id, role = role_for_ordinal(pod_ordinal(pod_name), master_role)
    if controller_mode:
        broker_id, role = pod_ordinal(pod_name) + 1, master_role
    wanted = {"brokerId": str(broker_id), "brokerRole": role, "brokerIP1": pod_ip}
    for var, key in (("PYROCKETMQ_ACCESS_KEY", "accessKey"), ("PYROCKETMQ_SECRET_KEY", "secretKey")):
        if env.get(var, "").strip():  # spec.acl's Secret: the broker's own account (not in the ConfigMap)
            wanted[key] = env[var].strip()
    wanted.update(_auth_user(env))
    out = [line for line in lines if _key(line) not in wanted]
    out.append(f"# set by the entrypoint for pod {pod_name}")
    out += [f"{k}={v}" for k, v in wanted.items()]
    return "\n".join(out) + "\n"


def _auth_user(env: Mapping[str, str]) -> dict[str, str]:
    """spec.auth's super user (``PYROCKETMQ_AUTH_USERNAME``/``_PASSWORD``): created at the broker's
    first start, and the account it signs its own requests with (unless spec.acl gives one)."""
    user, password = env.get("PYROCKETMQ_AUTH_USERNAME", "").strip(), env.get("PYROCKETMQ_AUTH_PASSWORD", "")
    if not user or not password:
        return {}
    keys = {"initAuthenticationUser": json.dumps({"username": user, "password": password}),
            "innerClientAuthenticationCredentials": json.dumps({"accessKey": user, "secretKey": password})}
    if not env.get("PYROCKETMQ_ACCESS_KEY", "").strip():
        keys.update(accessKey=user, secretKey=password)
    return keys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    template_path = os.environ.get("BROKER_CONF_TEMPLATE", "/etc/pyrocketmq/broker.conf")
    out_path = os.environ.get("BROKER_CONF", "/var/run/pyrocketmq/broker.conf")
    try:
        with open(template_path, encoding="utf-8") as f:
            conf = pod_conf(f.read(), os.environ)
    except (OSError, PodConfError) as e:
        print(f"pyrocketmq entrypoint: {e}", file=sys.stderr)
        return 2
    if "--print" in args:
        sys.stdout.write(conf)
        return 0
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(conf)
    os.replace(tmp, out_path)
    rest = [a for a in args if a != "--print"]
    os.execvp(sys.executable, [sys.executable, "-m", "pyrocketmq", "broker", "-c", out_path, *rest])
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
