"""Reconciliation of each kind as a flat chain of named steps (Strimzi's shape).

Every chain is level-based and idempotent: it reads the resource and the world, renders what should
be, applies it in one step and writes the status. It runs on create/update/resume and on the resync
timer alike, so a deleted StatefulSet, a hand-edited Service or an operator restarted half way
through all converge the same way. A step that cannot go on raises :class:`ReconcileError` with a
reason for the Ready condition; the kopf layer (:mod:`.handlers`) turns it into a status, an Event
and a retry with backoff.

=============  =========================================================================
kind           steps
=============  =========================================================================
NameServer     load → render → apply → update_status
Broker         load → resolve_name_servers → observe → failover → plan_scale_down → render
               → gate_rollout → apply → update_status
Topic          load → resolve_cluster → apply_on_brokers → update_status
ConsumerGroup  load → resolve_cluster → apply_on_brokers → observe_members → update_status
=============  =========================================================================
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .apply import ApplyResult, apply_objects, owned_by
from .context import (
    Context,
    ReconcileError,
    broker_name_servers,
    broker_secrets,
    cluster_nodes,
    repair_events,
    run_steps,
    write_status,
)
from .drain import ROLE_LABEL, drain_moves, handovers, role_labels, routed
from .managed_tls import ensure_managed
from .model import GROUP_VERSION, BrokerModel, ConsumerGroupModel, NameServerModel, TopicModel
from .names import BROKER_PORT, group_index, namesrv_addresses
from .nodeloss import master_pods
from .plan import (
    Action,
    DrainFacts,
    GroupRollFacts,
    removable_groups,
    rollout_partitions,
    scale_down_decision,
)
from .render import render_broker, render_nameserver
from .render.common import ANNOTATION_TEMPLATE_HASH, LABEL_GROUP, owner_labels, selector_labels
from .replace_lost import node_loss_condition, replace_lost
from .rocketmq import (
    ANNOTATION_SWITCHOVER,
    RocketMQRefused,
    RocketMQUnavailable,
    admin_session,
    apply_group,
    apply_topic,
    controller_views,
    drain_facts,
    group_stats,
    registered_groups,
    request_switchover,
    reset_group_offsets,
    stop_writes,
    topic_brokers,
)
from .scaler import scale_on_lag
from .security import ClientSecurity, SecretError, read_nameserver_secrets
from .status import (
    Condition,
    all_ready,
    broker_conditions,
    broker_group_status,
    condition_of,
    failover_condition,
    master_columns,
    merge_conditions,
    node_zones,
    now_ms,
    now_rfc3339,
    short_groups,
    spread_condition,
    statefulset_rolled_out,
)

# -- NameServer -----------------------------------------------------------------------------------


class NameServerReconcile:
    def __init__(self, body: Mapping[str, Any], ctx: Context) -> None:
        self.body, self.ctx = body, ctx
        self.previous: Mapping[str, Any] = body.get("status") or {}

    async def run(self) -> None:
        await run_steps([self.load, self.replace_lost, self.render, self.apply, self.update_status])

    async def replace_lost(self) -> None:
        """A name server pinned (by its controller claim) to a node down for replaceAfter starts elsewhere."""
        ref, self.lost = self.model.ref, []
        if self.nodes is not None:
            pods = await self.ctx.kube.list("v1", "Pod", ref.namespace, selector_labels(ref, "namesrv"))
            self.lost = await replace_lost(self.ctx.kube, self.ctx.event, ref.namespace, pods, self.nodes,
                                           None, LABEL_GROUP, self.model.replace_after)

    async def load(self) -> None:
        model = NameServerModel.from_body(self.body)
        await ensure_managed(self.ctx, model)
        try:
            model = await read_nameserver_secrets(self.ctx.kube.get, model)
        except SecretError as e:
            raise ReconcileError(e.reason, str(e)) from None
        self.nodes = await cluster_nodes(self.ctx.kube)
        self.model = replace(model, nodes=None if self.nodes is None else len(self.nodes))

    async def render(self) -> None:
        self.desired = render_nameserver(self.model, self.ctx.settings.render)

    async def apply(self) -> None:
        ref = self.model.ref
        self.result = await apply_objects(self.ctx.kube, ref, self.desired, owner_labels(ref, "namesrv"),
                                          self.ctx.settings.field_manager)
        repair_events(self.ctx, self.result, first_time="observedGeneration" not in self.previous)

    async def update_status(self) -> None:
        ref, model = self.model.ref, self.model
        sts = self.result.stored.get(("StatefulSet", ref.name)) or {}
        ready = int((sts.get("status") or {}).get("readyReplicas") or 0)
        addrs = namesrv_addresses(ref.name, ref.namespace, model.replicas,
                                  self.ctx.settings.render.cluster_domain)
        conds = [
            Condition("Ready", ready >= model.replicas,
                      "AllReplicasReady" if ready >= model.replicas else "PodsNotReady",
                      f"{ready}/{model.replicas} name servers ready"),
            Condition("Reconciling", not statefulset_rolled_out(sts),
                      "RollingUpdate" if not statefulset_rolled_out(sts) else "Reconciled", ""),
            Condition("Degraded", 0 < ready < model.replicas,
                      "ReplicasNotReady" if 0 < ready < model.replicas else "AsExpected", ""),
            spread_condition(model.replicas, model.nodes, "NameServer"),
            node_loss_condition(self.lost),
        ]
        await write_status(self.ctx, self.body, {
            "observedGeneration": ref.generation,
            "replicas": model.replicas,
            "readyReplicas": ready,
            "addresses": addrs,
            "namesrvAddr": ";".join(addrs),
            "conditions": merge_conditions(self.previous.get("conditions"), conds, ref.generation,
                                           now_rfc3339()),
        })


# -- Broker ---------------------------------------------------------------------------------------


HANDOVER_ROUTE_POLLS = 20
"""How often (every 0.5 s) a reconcile asks whether the name servers route a new master yet."""


class BrokerReconcile:
    def __init__(self, body: Mapping[str, Any], ctx: Context) -> None:
        self.body, self.ctx = body, ctx
        self.previous: Mapping[str, Any] = body.get("status") or {}
        self.keep: list[int] = []
        self.waiting: list[tuple[str, str, str]] = []
        self.removed: list[tuple[str, str]] = []
        self.rollout_waiting: list[str] = []
        self.views: dict[str, dict[str, Any]] = {}
        """Automatic failover: the controller's view of each group."""
        self.switchover: dict[str, Any] | None = None

    async def run(self) -> None:
        await run_steps([
            self.load,
            self.resolve_name_servers,
            self.observe,
            self.failover,
            self.replace_lost,
            self.plan_scale_down,
            self.render,
            self.gate_rollout,
            self.apply,
            self.update_status,
        ])

    async def load(self) -> None:
        self.nodes = await cluster_nodes(self.ctx.kube)
        self.model = replace(BrokerModel.from_body(self.body),
                             nodes=None if self.nodes is None else len(self.nodes))

    async def resolve_name_servers(self) -> None:
        self.namesrv_addrs, controller = await broker_name_servers(self.ctx, self.model)
        if self.model.failover_asked and not controller:
            where = (f"NameServer {self.model.namesrv_name!r}" if self.model.namesrv_name
                     else "spec.nameServer.addresses")
            raise ReconcileError("NoController", f"spec.failover.enabled: {where} runs no controller; "
                                 "give the NameServer 1 or 3 (or more) replicas and spec.controller.enabled, "
                                 "or drop spec.failover")
        self.model = self.model.with_controller(controller)
        self.controller = controller
        self.admin_addr = ";".join(self.namesrv_addrs)
        await ensure_managed(self.ctx, self.model)
        self.model, self.security = await broker_secrets(self.ctx, self.model)

    async def observe(self) -> None:
        ref, kube = self.model.ref, self.ctx.kube
        statefulsets = await kube.list("apps/v1", "StatefulSet", ref.namespace, owner_labels(ref, "broker"))
        self.statefulsets = {s["metadata"]["name"]: s for s in statefulsets if owned_by(s, ref.uid)}
        self.pods = await kube.list("v1", "Pod", ref.namespace, selector_labels(ref, "broker"))
        self.existing = {i for n in self.statefulsets if (i := group_index(ref.name, n)) is not None}
        self.model = replace(self.model, short=short_groups(self.statefulsets.values()))

    async def failover(self) -> None:
        """Automatic failover: the controller's view of each group, a switchover the
        ``pyrocketmq.io/switchover`` annotation asks for, a master moved off a cordoned node."""
        if not self.model.failover:
            return
        try:
            async with admin_session(self.admin_addr, self.ctx.settings.reconcile.admin_timeout,
                                     self.security) as admin:
                self.views = await controller_views(admin, self.admin_addr)
                await self.switch_over(admin)
                if await self.move_off_cordoned(admin):
                    self.views = await controller_views(admin, self.admin_addr)
        except (RocketMQUnavailable, RocketMQRefused) as e:
            self.ctx.log.info("the controller did not answer: %s", e)
        await self.label_roles()

    async def switch_over(self, admin: Any) -> None:
        """The annotation asks once: its pod is made master (asked again at each resync while the
        controller refuses: not in sync yet, not alive), then the annotation is removed, so that
        naming the same pod again later (after a failover moved mastership) is a new request."""
        model = self.model
        annotations = (self.body.get("metadata") or {}).get("annotations") or {}
        target = str(annotations.get(ANNOTATION_SWITCHOVER, ""))
        if not target:
            return
        if target not in master_pods(model.group_names, True, self.views).values():
            last = self.previous.get("switchover") or {}
            self.switchover = await request_switchover(admin, self.admin_addr, model, target)
            if self.switchover != last:
                self.ctx.event("Normal" if self.switchover["result"] == "Done" else "Warning", "Switchover",
                               self.switchover["message"])
            if self.switchover["result"] != "Done":
                return
            self.views = await controller_views(admin, self.admin_addr)
        await self.ctx.kube.patch_annotations(GROUP_VERSION, "Broker", model.ref.namespace, model.ref.name,
                                              {ANNOTATION_SWITCHOVER: None})  # fmt: skip

    async def move_off_cordoned(self, admin: Any) -> bool:
        """A master on a cordoned node (a drain) hands over to an in-sync replica elsewhere first."""
        groups = self.model.group_names
        moves = drain_moves(master_pods(groups, True, self.views), self.views, self.pods, self.nodes or ())
        for group, pod in moves.items():
            result = await request_switchover(admin, self.admin_addr, self.model, pod)
            self.ctx.event("Normal" if result["result"] == "Done" else "Warning", "MasterMovedForDrain",
                           f"{group}: its master's node is cordoned; {result['message']}")
        return bool(moves)

    async def label_roles(self) -> None:
        """pyrocketmq.io/role on each pod, as elected: the master's budget holds a drain's eviction.
        A handover is relabelled once the name servers route the new master (see ``drain``)."""
        groups = self.model.group_names
        master_of = {g: m for g, m in master_pods(groups, True, self.views).items() if g in self.views}
        pending = handovers(master_of, self.pods, LABEL_GROUP)
        if pending:
            ready = await self.routed_handovers(pending, master_of)
            master_of = {g: m for g, m in master_of.items() if g not in pending or g in ready}
        # none while the controller is silent
        for pod, role in role_labels(master_of, self.pods, LABEL_GROUP).items():
            await self.ctx.kube.patch_labels("v1", "Pod", self.model.ref.namespace, pod, {ROLE_LABEL: role})

    async def routed_handovers(self, pending: set[str], master_of: Mapping[str, str]) -> set[str]:
        """The ``pending`` groups the name servers route to their new master, asked for a few
        seconds (a master registers again as soon as it is elected); the others wait for a resync.
        With master Services the route names the Service: those the Service leads to the new master."""
        if self.model.master_service and self.ctx.follower is not None:
            return self.ctx.follower.leading(self.model.ref.namespace, pending, self.views)
        settings = self.ctx.settings.reconcile
        ready: set[str] = set()
        try:
            async with admin_session(self.admin_addr, settings.admin_timeout, self.security) as admin:
                for attempt in range(HANDOVER_ROUTE_POLLS):
                    if attempt:
                        await asyncio.sleep(0.5)
                    registered = await registered_groups(admin, self.model.cluster_name)
                    ready = routed(pending, master_of, registered, self.pods, BROKER_PORT)
                    if ready == pending:
                        break
        except (RocketMQUnavailable, RocketMQRefused) as e:
            self.ctx.log.info("the name servers did not answer: %s", e)
        return ready

    async def replace_lost(self) -> None:
        """Replicas whose node has been down for spec.nodeLoss.replaceAfter start again elsewhere."""
        self.lost = []
        if self.nodes is None:  # the operator may not read nodes: it cannot tell a lost one
            return
        model = self.model
        master_of = master_pods(model.group_names, model.failover, self.views)
        self.lost = await replace_lost(self.ctx.kube, self.ctx.event, model.ref.namespace, self.pods,
                                       self.nodes, master_of, LABEL_GROUP, model.replace_after)

    async def plan_scale_down(self) -> None:
        model, timeout = self.model, self.ctx.settings.reconcile.admin_timeout
        previous_groups = {g.get("name"): g for g in self.previous.get("groups") or ()}
        for index in removable_groups(self.existing, model.groups):
            name = model.group_name(index)
            served = bool((previous_groups.get(name) or {}).get("servedTraffic"))
            sts_status = (self.statefulsets.get(name) or {}).get("status") or {}
            sts_ready = int(sts_status.get("readyReplicas") or 0)
            served = served or sts_ready > 0
            facts = DrainFacts(name, served_traffic=served)
            if served and not model.force_scale_down:
                try:
                    async with admin_session(self.admin_addr, timeout, self.security) as admin:
                        facts = await drain_facts(admin, model.cluster_name, name, served)
                except (RocketMQUnavailable, RocketMQRefused) as e:
                    facts = DrainFacts(name, served_traffic=True, error=str(e))
            decision = scale_down_decision(facts, model.force_scale_down)
            if decision.action is Action.STOP_WRITES:
                async with admin_session(self.admin_addr, timeout, self.security) as admin:
                    changed = await stop_writes(admin, model.cluster_name, name)
                self.ctx.event("Normal", "StoppingWrites",
                               f"{name}: topics made read-only for the scale-down: " + ", ".join(changed))
            if decision.action is Action.REMOVE:
                self.removed.append((name, decision.message))
            else:
                self.keep.append(index)
                self.waiting.append((name, decision.reason, decision.message))
        before = condition_of(self.previous, "ScaleDownPending")
        if self.waiting and (before is None or before.get("reason") != self.waiting[0][1]
                             or before.get("status") != "True"):
            self.ctx.event("Warning" if self.waiting[0][1] == "MasterUnreachable" else "Normal",
                           "ScaleDownWaiting", "; ".join(m for _, _, m in self.waiting))

    async def render(self) -> None:
        groups = sorted(set(range(self.model.groups)) | set(self.keep))
        self.groups = groups
        self.desired = render_broker(self.model, self.namesrv_addrs, self.ctx.settings.render, groups=groups)

    async def gate_rollout(self) -> None:
        """Set each group's StatefulSet partition so that groups replace their pods one at a time."""
        rendered = {o["metadata"]["name"]: o for o in self.desired if o["kind"] == "StatefulSet"}
        facts = []
        for index in self.groups:
            name = self.model.group_name(index)
            live = self.statefulsets.get(name)
            if live is None:
                facts.append(GroupRollFacts(index, exists=False))
                continue
            want = rendered[name]["metadata"]["annotations"][ANNOTATION_TEMPLATE_HASH]
            have = ((live.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_TEMPLATE_HASH)
            spec = live.get("spec") or {}
            replicas = int(spec.get("replicas", 1))
            rolling_update = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
            partition = int(rolling_update.get("partition") or 0)
            facts.append(GroupRollFacts(
                index,
                template_changed=want != have,
                released=partition < replicas,
                rolled_out=statefulset_rolled_out(live),
                all_ready=all_ready(live),
            ))
        partitions = rollout_partitions(facts, self.model.replicas_per_group)
        for index, partition in partitions.items():
            name = self.model.group_name(index)
            rendered[name]["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = partition
        released = [f.index for f in facts if f.exists and (f.template_changed or not f.released)
                    and partitions[f.index] == 0]
        waiting = [self.model.group_name(i) for i, p in partitions.items() if p > 0]
        for index in released:
            self.ctx.event("Normal", "RollingGroup", f"replacing the pods of {self.model.group_name(index)}"
                           + (f"; waiting: {', '.join(waiting)}" if waiting else ""))
        self.rollout_waiting = waiting

    async def apply(self) -> None:
        ref = self.model.ref
        self.result = await apply_objects(self.ctx.kube, ref, self.desired, owner_labels(ref, "broker"),
                                          self.ctx.settings.field_manager)
        if self.ctx.follower is not None:  # spec.failover.masterService
            self.ctx.follower.update(self.model, self.admin_addr, self.security, self.result.stored)
        known = {g.get("name") for g in self.previous.get("groups") or ()}
        desired_group = {key: (o["metadata"].get("labels") or {}).get(LABEL_GROUP) for o in self.desired
                         if (key := (o["kind"], o["metadata"]["name"]))}
        repaired = ApplyResult(created=[k for k in self.result.created
                                        if desired_group.get(k) in known | {None}])
        repair_events(self.ctx, repaired, first_time="observedGeneration" not in self.previous)
        for _, message in self.removed:
            self.ctx.event("Normal", "GroupRemoved", message)
        created_groups = [n for kind, n in self.result.created if kind == "StatefulSet" and n not in known]
        if created_groups and "observedGeneration" in self.previous:
            self.ctx.event("Normal", "GroupsCreated", "created broker groups: " + ", ".join(created_groups))

    async def update_status(self) -> None:
        model, ref = self.model, self.model.ref
        previous_groups = {g.get("name"): g for g in self.previous.get("groups") or ()}
        groups = []
        rolled_out = True
        for index in self.groups:
            name = model.group_name(index)
            sts = self.result.stored.get(("StatefulSet", name))
            if sts is not None and not statefulset_rolled_out(sts):
                rolled_out = False
            groups.append(broker_group_status(model, index, sts, self.pods, previous_groups.get(name),
                                              draining=index >= model.groups, controller=self.views.get(name),
                                              zones=node_zones(self.nodes or ())))
            before, now = (previous_groups.get(name) or {}).get("epoch"), groups[-1].get("epoch")
            if now is not None and before is not None and now != before:
                self.ctx.event("Normal" if self.switchover else "Warning", "MasterElected",
                               f"{name}: {groups[-1]['master']['pod'] or 'no pod'} is master at epoch {now} "
                               f"(was epoch {before})")
        conds = broker_conditions(groups, model.groups, rolled_out, self.waiting, self.rollout_waiting)
        conds.append(spread_condition(model.replicas_per_group, model.nodes, "group"))
        conds.append(failover_condition(model, self.controller))
        conds.append(node_loss_condition(self.lost))
        ready_groups = sum(1 for g in groups
                           if g["phase"] == "Active" and g["readyReplicas"] >= g["replicas"])
        await write_status(self.ctx, self.body, {
            "observedGeneration": ref.generation,
            "clusterName": model.cluster_name,
            "nameServers": self.namesrv_addrs,
            "readyGroups": ready_groups,
            "groups": groups,
            **master_columns(groups),
            **({"switchover": self.switchover or self.previous.get("switchover")}
               if self.switchover or self.previous.get("switchover") else {}),
            "conditions": merge_conditions(self.previous.get("conditions"), conds, ref.generation,
                                           now_rfc3339()),
        })


# -- Topic and ConsumerGroup ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    """How the operator reaches the Broker cluster a Topic or ConsumerGroup names."""

    cluster_name: str
    admin_addr: str
    draining: frozenset[str]
    security: ClientSecurity = ClientSecurity()


async def resolve_cluster(ctx: Context, namespace: str, broker_name: str, *,
                          for_delete: bool = False) -> ClusterTarget | None:
    """The target cluster. On deletion ``None`` when there is nothing to clean: the Broker is gone or
    going, or none of its groups ever served (so no broker can hold the topic or group)."""
    body = await ctx.kube.get(GROUP_VERSION, "Broker", namespace, broker_name)
    if body is None and not for_delete:
        raise ReconcileError("ClusterNotFound", f"Broker {broker_name!r} not found in namespace {namespace}")
    if for_delete and (
        body is None
        or (body.get("metadata") or {}).get("deletionTimestamp")
        # No group ever served (no master ever ready or registered): nothing can hold the topic/group.
        or not any(g.get("servedTraffic") for g in (body.get("status") or {}).get("groups") or ())
    ):
        return None
    assert body is not None
    model = BrokerModel.from_body(body)
    addrs, _ = await broker_name_servers(ctx, model)
    draining = frozenset(str(g.get("name")) for g in (body.get("status") or {}).get("groups") or ()
                         if g.get("phase") == "Draining")
    return ClusterTarget(model.cluster_name, ";".join(addrs), draining, (await broker_secrets(ctx, model))[1])


class _OnBrokersReconcile:
    """The chain shared by Topic and ConsumerGroup: load the spec, find the cluster's brokers, apply
    there, write the status. Subclasses give the model type and the last two steps."""

    model_type: Any

    def __init__(self, body: Mapping[str, Any], ctx: Context) -> None:
        self.body, self.ctx = body, ctx
        self.previous: Mapping[str, Any] = body.get("status") or {}

    async def run(self) -> None:
        await run_steps([self.load, self.resolve_cluster, self.apply_on_brokers, self.update_status])

    async def load(self) -> None:
        self.model = self.model_type.from_body(self.body)

    async def resolve_cluster(self) -> None:
        target = await resolve_cluster(self.ctx, self.model.ref.namespace, self.model.cluster_ref)
        assert target is not None
        self.target = target

    async def apply_on_brokers(self) -> None:
        raise NotImplementedError

    async def update_status(self) -> None:
        raise NotImplementedError


class TopicReconcile(_OnBrokersReconcile):
    model_type = TopicModel

    async def apply_on_brokers(self) -> None:
        async with admin_session(self.target.admin_addr, self.ctx.settings.reconcile.admin_timeout,
                                 self.target.security) as admin:
            names = await apply_topic(admin, self.model, self.target.cluster_name, self.target.draining,
                                      self.previous.get("messageType"))
            try:
                self.brokers = await topic_brokers(admin, self.model.topic_name)
            except RocketMQRefused:
                self.brokers = []
            if not self.brokers:  # the route shows up once the brokers re-register
                self.brokers = [{"brokerName": n, "readQueueNums": self.model.read_queue_nums,
                                 "writeQueueNums": self.model.write_queue_nums, "perm": self.model.perm}
                                for n in names]
        ref = self.model.ref
        if self.previous.get("observedGeneration") != ref.generation or _not_ready(self.previous):
            self.ctx.event("Normal", "TopicApplied", f"topic {self.model.topic_name} on {', '.join(names)} "
                           f"of cluster {self.target.cluster_name}")

    async def update_status(self) -> None:
        ref = self.model.ref
        message = f"on {len(self.brokers)} brokers of cluster {self.target.cluster_name}"
        conds = [Condition("Ready", True, "TopicApplied", message),
                 Condition("Reconciling", False, "Reconciled", "")]
        await write_status(self.ctx, self.body, {
            "observedGeneration": ref.generation,
            "topicName": self.model.topic_name,
            "clusterName": self.target.cluster_name,
            "messageType": self.model.message_type,
            "brokers": self.brokers,
            "conditions": merge_conditions(self.previous.get("conditions"), conds, ref.generation,
                                           now_rfc3339()),
        })


def _not_ready(status: Mapping[str, Any]) -> bool:
    ready = condition_of(status, "Ready")
    return ready is None or ready.get("status") != "True"


class ConsumerGroupReconcile(_OnBrokersReconcile):
    model_type = ConsumerGroupModel

    async def apply_on_brokers(self) -> None:
        async with admin_session(self.target.admin_addr, self.ctx.settings.reconcile.admin_timeout,
                                 self.target.security) as admin:
            self.brokers = await apply_group(admin, self.model, self.target.cluster_name,
                                             self.target.draining)
            self.reset, reset_now = await reset_group_offsets(admin, self.model.group_name,
                                                              self.model.reset_offset,
                                                              self.previous.get("offsetReset"), now_rfc3339())
            self.stats = await group_stats(admin, self.model.group_name)
        self.scaled = None if self.model.autoscale is None else await scale_on_lag(
            self.ctx.kube, self.ctx.event, self.model.ref.namespace, self.model.autoscale,
            self.stats.total_lag, self.stats.queues, self.previous.get("autoscale"), now_ms(), now_rfc3339())
        if reset_now:
            done = self.reset or {}
            self.ctx.event("Normal", "OffsetReset",
                           f"group {self.model.group_name} on {done.get('topic')} reset to {done.get('to')}")
        ref = self.model.ref
        if self.previous.get("observedGeneration") != ref.generation or _not_ready(self.previous):
            self.ctx.event("Normal", "GroupApplied", f"consumer group {self.model.group_name} on "
                           f"{', '.join(self.brokers)} of cluster {self.target.cluster_name}")

    async def update_status(self) -> None:
        ref = self.model.ref
        conds = [Condition("Ready", True, "GroupApplied", f"on {len(self.brokers)} brokers, "
                           f"{len(self.stats.members)} members online"),
                 Condition("Reconciling", False, "Reconciled", "")]
        await write_status(self.ctx, self.body, {
            "observedGeneration": ref.generation,
            "groupName": self.model.group_name,
            "clusterName": self.target.cluster_name,
            "brokers": self.brokers,
            "membersOnline": len(self.stats.members),
            "members": list(self.stats.members[:50]),
            "lag": [{"topic": t, "lag": n} for t, n in self.stats.lag_by_topic.items()],
            "totalLag": self.stats.total_lag,
            **({"offsetReset": self.reset} if self.reset else {}),
            **({"autoscale": self.scaled} if self.scaled else {}),
            "conditions": merge_conditions(self.previous.get("conditions"), conds, ref.generation,
                                           now_rfc3339()),
        })


RECONCILERS: dict[str, Callable[[Mapping[str, Any], Context], Any]] = {
    "NameServer": NameServerReconcile,
    "Broker": BrokerReconcile,
    "Topic": TopicReconcile,
    "ConsumerGroup": ConsumerGroupReconcile,
}


async def reconcile(body: Mapping[str, Any], ctx: Context) -> None:
    await RECONCILERS[str(body.get("kind"))](body, ctx).run()
