"""The ``pyrocketmq`` command: dispatches to the server or client entry points.

It lives above the packages so that ``broker``, ``namesrv`` and ``client`` stay independent of
each other (an import-linter contract); each sub-command imports only what it runs.
"""

from __future__ import annotations

import sys

USAGE = """usage: pyrocketmq <command> [options]

commands:
  namesrv     run a name server           (pyrocketmq namesrv [-c namesrv.conf] [--listen-port N])
  controller  run a controller alone       (a name server with enableControllerInNamesrv=true; same options)
  broker      run a broker                (pyrocketmq broker -c broker.conf [-n host:port;host:port])
  admin       administer a cluster        (pyrocketmq admin <command> ...; see 'pyrocketmq admin -h')
  produce     send messages               (pyrocketmq produce -n ADDR -t TOPIC ...)
  consume     read messages               (pyrocketmq consume -n ADDR -t TOPIC ...)
  bench       load-test with the client   (pyrocketmq bench produce|consume -n ADDR -t TOPIC ...)
  quickstart  run a local name server + broker and a sample (see README)
  operator    run the Kubernetes operator  (pyrocketmq operator [--all-namespaces | -n NS ...]; \
needs [operator])

Run 'pyrocketmq <command> -h' for a command's options."""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if args else 2
    cmd, rest = args[0], args[1:]
    if cmd == "namesrv":
        from pyrocketmq.namesrv.app import main as run
    elif cmd == "controller":  # brokers that only use it as controllerAddr never register with it
        from pyrocketmq.namesrv.app import main as namesrv_main

        return namesrv_main(["--set", "enableControllerInNamesrv=true", *rest])
    elif cmd == "broker":
        from pyrocketmq.broker.app import main as run
    elif cmd == "quickstart":
        from pyrocketmq.quickstart import main as run
    elif cmd == "operator":
        from pyrocketmq.operator.__main__ import main as run
    elif cmd in ("admin", "produce", "consume", "bench"):
        from pyrocketmq.client.cli import main as client_main

        return client_main([cmd, *rest])
    else:
        print(f"pyrocketmq: unknown command {cmd!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return run(rest)
