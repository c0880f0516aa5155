#!/bin/bash
# Entrypoint of the pyrocketmq Spark image for Spark's Kubernetes backend, which starts its Pods
# with one of two commands (as Apache Spark's own image entrypoint handles them):
#
#   driver ARGS     the driver Pod: spark-submit in client mode inside the cluster, bound to the Pod IP
#   executor        an executor Pod: the executor backend, configured by SPARK_* variables
#
# Anything else is run as given (e.g. `python3 -m pyrocketmq.spark.pipelines.order_totals …`).
set -euo pipefail
: "${SPARK_HOME:?SPARK_HOME must point at the Spark installation}"

case "${1:-}" in
  driver)
    shift
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    # JVM options arrive as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, … (in that order).
    java_opts=()
    for i in $(env | sed -n 's/^SPARK_JAVA_OPT_\([0-9]*\)=.*/\1/p' | sort -n); do
      var="SPARK_JAVA_OPT_$i"
      java_opts+=("${!var}")
    done
    exec java "${java_opts[@]}" -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
      -cp "${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" --podName "${SPARK_EXECUTOR_POD_NAME:-}"
    ;;
  *)
    exec "$@"
    ;;
esac
