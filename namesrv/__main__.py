"""``python -m pyrocketmq.namesrv``: run a name server (same options as ``pyrocketmq namesrv``)."""

from .app import main

raise SystemExit(main())
