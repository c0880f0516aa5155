"""The HTTP side of observability: ``/metrics``, ``/healthz`` and ``/readyz`` over aiohttp.

One :class:`MetricsServer` per process, on the process's event loop, next to its remoting port:

- ``/metrics`` — the process's own :class:`~prometheus_client.CollectorRegistry` in the Prometheus
  text format (OpenMetrics when the scraper asks for it). Collectors read the server's state here,
  on the loop thread, so they see it between two requests, never in the middle of one.
- ``/healthz`` — liveness: 200 whenever the loop answers (a wedged loop answers nothing).
- ``/readyz`` — readiness: 200 when ``ready()`` says so, else 503 with the reason in the body.

The server starts before the store recovers, so liveness holds during a long recovery while
readiness says "recovering". Port 0 binds a free port (tests); the bound port is :attr:`port`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

log = logging.getLogger("pyrocketmq.metrics")

ReadyCheck = Callable[[], str | None]
"""Returns ``None`` when ready, else why not (one line, shown by ``/readyz``)."""


class MetricsServer:
    """Serve a registry and the health endpoints.

    >>> import asyncio
    >>> async def demo():
    ...     server = MetricsServer(CollectorRegistry(), lambda: None)
    ...     port = await server.start("127.0.0.1", 0)
    ...     await server.stop()
    ...     return port > 0
    >>> asyncio.run(demo())
    True
    """

    def __init__(self, registry: CollectorRegistry, ready: ReadyCheck) -> None:
        self.registry = registry
        self.ready = ready
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int) -> int:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses  # the bound (host, port, ...) tuples
        self.port = int(addresses[0][1]) if addresses else port
        return self.port

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _metrics(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        try:
            body = encoder(self.registry)
        except Exception:  # a collector bug must not take the endpoint down silently
            log.exception("collecting metrics failed")
            return web.Response(status=500, text="collecting metrics failed; see the server log\n")
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        try:
            reason = self.ready()
        except Exception as e:
            reason = f"readiness check failed: {type(e).__name__}: {e}"
        if reason is None:
            return web.Response(text="ready\n")
        return web.Response(status=503, text=f"not ready: {reason}\n")
