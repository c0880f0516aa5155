#!/bin/sh
# The image's entrypoint: one image, three servers.
#
#   namesrv [args]   a name server (pyrocketmq namesrv)
#   broker [args]    a broker; its identity comes from the pod: ordinal 0 is the master, ordinal n a
#                    slave with brokerId n, brokerIP1 the pod IP (pyrocketmq.operator.podconf reads
#                    $BROKER_CONF_TEMPLATE, writes $BROKER_CONF, then runs pyrocketmq broker)
#   operator [args]  the Kubernetes operator (python -m pyrocketmq.operator)
#   anything else    run as given (a shell, pyrocketmq admin ...)
set -eu
PYTHON="${PYTHON:-python}"
cmd="${1:-operator}"
[ "$#" -gt 0 ] && shift
case "$cmd" in
  namesrv)  exec "$PYTHON" -m pyrocketmq namesrv "$@" ;;
  broker)   exec "$PYTHON" -m pyrocketmq.operator.podconf "$@" ;;
  operator) exec "$PYTHON" -m pyrocketmq.operator "$@" ;;
  *)        exec "$cmd" "$@" ;;
esac
