"""Pure renderers: a custom resource's model in, the Kubernetes manifests it implies out.

Nothing here does I/O or knows kopf: each function takes a model (:mod:`pyrocketmq.operator.model`)
and settings and returns plain dicts, ready for server-side apply. "No desired object" means the
apply step deletes it (Strimzi's and zalando's rule), so a renderer describes the whole wanted state.
"""

from .broker import broker_conf, render_broker
from .namesrv import render_nameserver

__all__ = ["broker_conf", "render_broker", "render_nameserver"]
