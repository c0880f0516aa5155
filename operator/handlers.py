"""The kopf handlers: thin. Each one takes the per-object lock, runs the kind's reconcile chain
(:mod:`.reconcile`) and maps the outcome to kopf: success, a retry with exponential backoff, or a
permanent error (an unusable spec; a spec change re-triggers it).

Everything lives in one registry built by :func:`build_registry` and in the memo of one operator run
(:class:`Runtime`): no module-level state, so tests can run several operators in one process and one
operator serves many clusters in many namespaces.

Handlers per kind (group ``pyrocketmq.io``, version ``v1alpha1``):

- ``on.create`` / ``on.update`` / ``on.resume`` → reconcile (the same level-based chain);
- ``timer`` every ``resync_interval`` → reconcile (repairs drift, refreshes status and lag);
- ``event`` on a broker StatefulSet the operator rendered: when one finishes its rolling update while
  its Broker is rolling, the Broker is reconciled at once, so the next group starts without waiting
  for the resync (groups roll one after another, :func:`.plan.rollout_partitions`);
- ``on.delete`` (Topic, ConsumerGroup, User: behind the finalizer ``pyrocketmq.io/finalizer``) → remove
  the topic/group/user from the brokers. NameServer and Broker carry no finalizer: their objects have
  owner references and are garbage-collected, so deleting them never waits for the operator (kopf
  would put one on for the timer alone; :func:`_timers_without_finalizer` takes that off).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import kopf

from .context import Context, ReconcileError, report_failure
from .deletion import delete_group_from_brokers, delete_topic_from_brokers
from .kubeapi import KubeClient, KubeError, load_configuration
from .master_follower import MasterFollower
from .metrics import OperatorMetrics
from .model import API_GROUP, API_VERSION, GROUP_VERSION
from .names import NAMESRV_PORT
from .namesrv_seed import seed_name_server, starting
from .reconcile import reconcile as reconcile_kind
from .render.common import LABEL_COMPONENT, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY
from .rocketmq import RocketMQRefused, RocketMQUnavailable
from .settings import OperatorSettings
from .status import all_ready, condition_of, statefulset_rolled_out
from .user_reconcile import delete_user_from_brokers, reconcile_user

log = logging.getLogger("pyrocketmq.operator")

PLURALS = {
    "NameServer": "nameservers",
    "Broker": "brokers",
    "Topic": "topics",
    "ConsumerGroup": "consumergroups",
    "User": "users",
}
DELETERS: dict[str, Callable[[Mapping[str, Any], Context], Awaitable[None]]] = {
    "Topic": delete_topic_from_brokers,
    "ConsumerGroup": delete_group_from_brokers,
    "User": delete_user_from_brokers,
}
FINALIZER = "pyrocketmq.io/finalizer"
ANNOTATION_PREFIX = "operator.pyrocketmq.io"


SEED_TRIES = 30
"""Seconds a starting name server pod is tried for its users (it may not listen yet)."""


@dataclass(slots=True)
class Runtime:
    """What one operator run shares between its handlers (kept in kopf's memo)."""

    settings: OperatorSettings
    metrics: OperatorMetrics = field(default_factory=OperatorMetrics)
    kube: KubeClient | None = None
    reconciles: int = 0
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    """One lock per object (by uid): kopf's handlers and the StatefulSet trigger never overlap."""
    follower: MasterFollower | None = None
    follower_task: asyncio.Task[None] | None = None
    seeded: set[str] = field(default_factory=set)
    """Name server pods (by uid) given their users (:mod:`.namesrv_seed`)."""


async def login() -> kopf.ConnectionInfo | None:
    """kopf's credentials, from the official client's login (:func:`.kubeapi.load_configuration`): in a
    pod its ServiceAccount, elsewhere the kubeconfig; kopf calls this again when a token expires."""
    conf = await load_configuration()
    if conf is None:
        return None
    scheme, _, token = (conf.api_key.get("BearerToken") or "").partition(" ")
    return kopf.ConnectionInfo(
        server=str(conf.host),
        ca_path=conf.ssl_ca_cert,
        insecure=not conf.verify_ssl,
        scheme=scheme or None,
        token=token or None,
        certificate_path=conf.cert_file,
        private_key_path=conf.key_file,
        username=conf.username or None,
        password=conf.password or None,
    )


def configure_kopf(settings: kopf.OperatorSettings, ours: OperatorSettings) -> kopf.OperatorSettings:
    """kopf's settings for this operator: its progress and diff-base in our annotations (the status is
    ours, and its schema has no room for kopf's), our finalizer, no CRD/namespace scanning (so a
    namespaced install needs no cluster-wide read rights), and no Events from log lines (every retry
    would post one): the operator posts its own, when something changes."""
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATION_PREFIX, key="last-handled-configuration"
    )
    settings.scanning.disabled = True
    settings.posting.level = logging.CRITICAL
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.networking.request_timeout = 60
    settings.execution.max_workers = 8
    return settings


def _context(runtime: Runtime, body: Mapping[str, Any], logger: kopf.Logger) -> Context:
    if runtime.kube is None:
        raise kopf.TemporaryError("the operator is still starting", delay=1)

    def event(type_: str, reason: str, message: str) -> None:
        try:
            # kopf declares a kopf.Body but posts for any mapping: it only reads the object's apiVersion,
            # kind and metadata with .get (kopf 1.45, bodies.build_object_reference via dicts.walk).
            kopf.event(body, type=type_, reason=reason, message=message)  # type: ignore[arg-type]
        except Exception as e:  # an Event is never worth failing a reconcile
            logger.debug("could not post an event: %s", e)

    return Context(kube=runtime.kube, settings=runtime.settings, event=event, log=logger,
                   follower=runtime.follower)


def _lock(runtime: Runtime, body: Mapping[str, Any]) -> asyncio.Lock:
    meta = body.get("metadata") or {}
    key = str(meta.get("uid") or f"{body.get('kind')}/{meta.get('namespace')}/{meta.get('name')}")
    lock = runtime.locks.get(key)
    if lock is None:
        lock = runtime.locks[key] = asyncio.Lock()
    return lock


async def _run(
    trigger: str,
    action: Callable[[Mapping[str, Any], Context], Awaitable[None]],
    body: Mapping[str, Any],
    memo: Any,
    retry: int,
    logger: kopf.Logger,
) -> None:
    runtime: Runtime = memo["runtime"]
    kind = str(body.get("kind"))
    snapshot = copy.deepcopy(dict(body))
    ctx = _context(runtime, snapshot, logger)
    metrics = runtime.metrics
    started = time.monotonic()
    async with _lock(runtime, body):
        try:
            await action(snapshot, ctx)
        except ReconcileError as e:
            metrics.errors.labels(kind, e.reason).inc()
            metrics.reconciles.labels(kind, trigger, "retry" if e.retry else "failed").inc()
            if trigger != "delete":
                await report_failure(ctx, snapshot, e.reason, e.message, e.step)
            if not e.retry:
                raise kopf.PermanentError(f"{e.reason}: {e.message}") from None
            delay = runtime.settings.reconcile.backoff(retry)
            logger.warning("%s (step %s); retrying in %.1f s", e.message, e.step, delay)
            raise kopf.TemporaryError(f"{e.reason}: {e.message}", delay=delay) from None
        except KubeError as e:
            reason = {0: "APIUnreachable", 403: "Forbidden", 409: "Conflict", 422: "ApplyRefused"}.get(
                e.status, "APIError"
            )
            metrics.errors.labels(kind, reason).inc()
            metrics.reconciles.labels(kind, trigger, "retry").inc()
            if trigger != "delete" and e.status != 0:
                await report_failure(ctx, snapshot, reason, e.message, None)
            raise kopf.TemporaryError(
                f"{reason}: {e}", delay=runtime.settings.reconcile.backoff(retry)
            ) from None
        except (kopf.TemporaryError, kopf.PermanentError, asyncio.CancelledError):
            raise
        except Exception as e:
            logger.exception("reconcile failed unexpectedly")
            metrics.errors.labels(kind, "InternalError").inc()
            metrics.reconciles.labels(kind, trigger, "retry").inc()
            if trigger != "delete":
                await report_failure(ctx, snapshot, "InternalError", f"{type(e).__name__}: {e}", None)
            raise kopf.TemporaryError(
                f"{type(e).__name__}: {e}", delay=runtime.settings.reconcile.backoff(retry)
            ) from None
        finally:
            metrics.duration.labels(kind).observe(time.monotonic() - started)
    runtime.reconciles += 1
    metrics.reconciles.labels(kind, trigger, "ok").inc()
    metrics.last_success.labels(kind).set(time.time())


def build_registry(settings: OperatorSettings) -> kopf.OperatorRegistry:
    """Every handler of the operator, on a registry of its own."""
    registry = kopf.OperatorRegistry()
    resync = settings.reconcile

    @kopf.on.startup(registry=registry)
    async def startup(memo: Any, logger: kopf.Logger, **_: Any) -> None:
        runtime: Runtime = memo["runtime"]
        runtime.kube = KubeClient(load_configuration)
        runtime.follower = MasterFollower(runtime.kube, runtime.settings.field_manager)
        runtime.follower_task = asyncio.create_task(runtime.follower.run())
        port = runtime.settings.watch.metrics_port
        if port:
            runtime.metrics.serve(port)
            logger.info("metrics on :%d/metrics", port)

    @kopf.on.cleanup(registry=registry)
    async def cleanup(memo: Any, **_: Any) -> None:
        runtime: Runtime = memo["runtime"]
        if runtime.follower_task is not None:
            runtime.follower_task.cancel()
            await asyncio.gather(runtime.follower_task, return_exceptions=True)
        if runtime.kube is not None:
            await runtime.kube.close()
        runtime.metrics.close()

    @kopf.on.login(registry=registry)
    async def login_handler(**_: Any) -> kopf.ConnectionInfo | None:
        return await login()

    @kopf.on.probe(id="reconciles", registry=registry)
    def probe(memo: Any, **_: Any) -> int:
        runtime: Runtime = memo["runtime"]
        return runtime.reconciles

    for kind, plural in PLURALS.items():
        _register_kind(registry, kind, plural, resync.resync_interval, resync.resync_initial_delay)

    @kopf.on.event(
        "apps",
        "v1",
        "statefulsets",
        labels={LABEL_COMPONENT: "broker", LABEL_MANAGED_BY: MANAGED_BY},
        registry=registry,
    )
    async def broker_statefulset(body: kopf.Body, type: str | None, memo: Any, logger: kopf.Logger,
                                 **_: Any) -> None:
        broker = await _rolling_broker(memo["runtime"], body, type)
        if broker is not None:
            await _run("statefulset", reconcile, broker, memo, 0, logger)

    @kopf.on.event("", "v1", "pods", labels={LABEL_COMPONENT: "namesrv", LABEL_NAME: "pyrocketmq"},
                   registry=registry)  # fmt: skip
    async def namesrv_pod(body: kopf.Body, type: str | None, memo: Any, logger: kopf.Logger,
                          **_: Any) -> None:
        # a started name server knows no user until given them: seed it before it is Ready
        runtime: Runtime = memo["runtime"]
        uid = str(body["metadata"].get("uid"))
        if type == "DELETED":
            runtime.seeded.discard(uid)
            return
        if runtime.kube is None or not starting(body) or uid in runtime.seeded:
            return
        runtime.seeded.add(uid)
        await _seed(runtime, body, logger)

    @kopf.on.event(API_GROUP, API_VERSION, "brokers", registry=registry)
    async def broker_gone(body: kopf.Body, type: str | None, memo: Any, **_: Any) -> None:
        follower = memo["runtime"].follower
        if type == "DELETED" and follower is not None:  # no finalizer: the event is all there is
            meta = body.get("metadata") or {}
            follower.forget(f"{meta.get('namespace')}/{meta.get('name')}")

    _timers_without_finalizer(registry, {p for k, p in PLURALS.items() if k not in DELETERS})
    return registry


async def _rolling_broker(
    runtime: Runtime, sts: Mapping[str, Any], event: str | None
) -> Mapping[str, Any] | None:
    """The Broker to reconcile now: ``sts`` has just finished rolling out, every replica Ready, and its
    Broker says it is in a rolling update (other groups wait for their turn)."""
    if event != "MODIFIED" or runtime.kube is None or not statefulset_rolled_out(sts) or not all_ready(sts):
        return None
    broker = await _owner_broker(runtime.kube, sts)
    rolling = condition_of((broker or {}).get("status"), "Reconciling")
    if not rolling or rolling.get("status") != "True" or rolling.get("reason") != "RollingUpdate":
        return None
    return broker


async def _seed(runtime: Runtime, pod: Mapping[str, Any], logger: kopf.Logger) -> None:
    """Seed a starting name server pod (:mod:`.namesrv_seed`), trying for a while: its process may
    not listen yet."""
    meta = pod["metadata"]
    addr = f"{pod['status']['podIP']}:{NAMESRV_PORT}"
    ctx = _context(runtime, dict(pod), logger)
    for _ in range(SEED_TRIES):
        try:
            name = str((meta.get("labels") or {}).get(LABEL_INSTANCE))
            users = await seed_name_server(ctx, str(meta.get("namespace")), name, addr)
            logger.info("name server %s seeded with %d users", meta.get("name"), users)
            return
        except (ReconcileError, RocketMQRefused, RocketMQUnavailable) as e:
            logger.info("seeding name server %s: %s", meta.get("name"), e)
            await asyncio.sleep(1.0)


async def _owner_broker(kube: KubeClient, sts: Mapping[str, Any]) -> Mapping[str, Any] | None:
    meta = sts.get("metadata") or {}
    owner = next((r for r in meta.get("ownerReferences") or () if r.get("kind") == "Broker"), None)
    if owner is None:
        return None
    broker = await kube.get(GROUP_VERSION, "Broker", str(meta.get("namespace") or ""), owner.get("name"))
    if broker is None or (broker.get("metadata") or {}).get("uid") != owner.get("uid"):
        return None
    return broker


def _timers_without_finalizer(registry: kopf.OperatorRegistry, plurals: set[str]) -> None:
    """kopf blocks the deletion of any object with a timer (to stop it gracefully); the resync timer
    holds nothing worth that, and a NameServer or Broker must stay deletable without the operator.
    kopf has no public switch for it: ``kopf.timer`` and ``kopf.daemon`` pass ``requires_finalizer=True``
    unconditionally (kopf 1.45, ``kopf/on.py``) and the handler dataclass is not exposed for building
    one by hand. The alternative, a resync loop of our own beside kopf's watches, would duplicate
    kopf's per-object scheduling and backoff. So the registered timer handlers are replaced by copies
    with ``requires_finalizer=False``; a unit test notices if kopf's internals change."""
    try:
        handlers = registry._spawning._handlers
        handlers[:] = [
            dataclasses.replace(h, requires_finalizer=False)
            if h.selector is not None and h.selector.any_name in plurals and hasattr(h, "requires_finalizer")
            else h
            for h in handlers
        ]
    except (AttributeError, TypeError) as e:  # pragma: no cover - a kopf we do not know
        log.warning("cannot drop the timers' finalizer (kopf changed?): %s", e)


async def reconcile(body: Mapping[str, Any], ctx: Context) -> None:
    """The reconcile chain of ``body``'s kind."""
    await (reconcile_user if body.get("kind") == "User" else reconcile_kind)(body, ctx)


def _register_kind(
    registry: kopf.OperatorRegistry, kind: str, plural: str, interval: float, initial_delay: float
) -> None:
    async def on_change(body: kopf.Body, memo: Any, retry: int, logger: kopf.Logger, reason: Any = None,
                        **_: Any) -> None:
        await _run(str(getattr(reason, "value", reason) or "change"), reconcile, body, memo, retry, logger)

    # kopf passes ``retry`` to timers too (execution.execute_handlers_once), but its TimerFn does not
    # declare it: the default keeps the handler assignable to TimerFn and is never used.
    async def on_resync(body: kopf.Body, memo: Any, logger: kopf.Logger, retry: int = 0, **_: Any) -> None:
        await _run("resync", reconcile, body, memo, retry, logger)

    resource = (API_GROUP, API_VERSION, plural)
    for decorator in (kopf.on.create, kopf.on.update, kopf.on.resume):
        decorator(*resource, id="reconcile", registry=registry)(on_change)
    kopf.timer(*resource, id="resync", interval=interval, initial_delay=initial_delay, registry=registry)(
        on_resync
    )

    deleter = DELETERS.get(kind)
    if deleter is not None:
        async def on_delete(body: kopf.Body, memo: Any, retry: int, logger: kopf.Logger, **_: Any) -> None:
            await _run("delete", deleter, body, memo, retry, logger)

        kopf.on.delete(*resource, id="cleanup", registry=registry)(on_delete)
