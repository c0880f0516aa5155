"""``python -m pyrocketmq.operator``: run the operator (also ``pyrocketmq operator``).

Settings come from ``PYROCKETMQ_OPERATOR_*`` environment variables (:mod:`.settings`); the command
line overrides the watch scope and the resync interval::

    python -m pyrocketmq.operator --all-namespaces
    python -m pyrocketmq.operator --namespace team-a --namespace team-b --resync-interval 10

Credentials: the pod's ServiceAccount in a cluster, else ``$KUBECONFIG`` / ``~/.kube/config``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys

from .settings import OperatorSettings


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pyrocketmq operator", description="Run the pyrocketmq Kubernetes operator."
    )
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="serve this namespace (repeatable); default: PYROCKETMQ_OPERATOR_NAMESPACES or all",
    )
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="serve every namespace")
    p.add_argument(
        "--resync-interval", type=float, metavar="S", help="seconds between resyncs of every resource"
    )
    p.add_argument(
        "--liveness", metavar="URL", help="liveness endpoint, e.g. http://0.0.0.0:8080/healthz, or 'off'"
    )
    p.add_argument("--metrics-port", type=int, metavar="N", help="port of /metrics (0: off)")
    p.add_argument("--log-level", default="INFO")
    return p


def settings_from_args(args: argparse.Namespace, base: OperatorSettings) -> OperatorSettings:
    watch, reconcile = base.watch, base.reconcile
    if args.all_namespaces:
        watch = dataclasses.replace(watch, namespaces=())
    elif args.namespace:
        watch = dataclasses.replace(watch, namespaces=tuple(args.namespace))
    if args.liveness:
        watch = dataclasses.replace(
            watch, liveness_endpoint=None if args.liveness == "off" else args.liveness
        )
    if args.metrics_port is not None:
        watch = dataclasses.replace(watch, metrics_port=args.metrics_port or None)
    if args.resync_interval:
        reconcile = dataclasses.replace(
            reconcile,
            resync_interval=args.resync_interval,
            resync_initial_delay=min(reconcile.resync_initial_delay, args.resync_interval),
        )
    return dataclasses.replace(base, watch=watch, reconcile=reconcile)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        import kopf
    except ImportError:
        print(
            "pyrocketmq operator: kopf is not installed: pip install 'pyrocketmq-k8s[operator]'",
            file=sys.stderr,
        )
        return 2
    from .handlers import Runtime, build_registry, configure_kopf

    settings = settings_from_args(args, OperatorSettings.from_env())
    registry = build_registry(settings)
    kopf_settings = configure_kopf(kopf.OperatorSettings(), settings)
    namespaces = settings.watch.namespaces
    logging.getLogger("pyrocketmq.operator").info(
        "serving %s; resync every %.0f s", ", ".join(namespaces) if namespaces else "all namespaces",
        settings.reconcile.resync_interval,
    )
    asyncio.run(
        kopf.operator(
            registry=registry,
            settings=kopf_settings,
            standalone=True,
            clusterwide=not namespaces,
            namespaces=list(namespaces),
            liveness_endpoint=settings.watch.liveness_endpoint,
            memo=kopf.Memo(runtime=Runtime(settings)),
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
