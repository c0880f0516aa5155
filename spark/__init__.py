"""pyrocketmq for PySpark: the ``pyrocketmq`` data source, pipelines, Spark-on-Kubernetes submission.

Example::

    from pyspark.sql import SparkSession
    from pyrocketmq.spark import register

    spark = SparkSession.builder.master("local[*]").getOrCreate()
    register(spark)
    orders = (spark.read.format("pyrocketmq")
              .option("nameServer", "127.0.0.1:9876").option("topic", "Orders").load())
    orders.selectExpr("tags", "CAST(body AS STRING)").show()

Importing this package does not import PySpark: the pure parts (:mod:`.options`, :mod:`.offsets`,
:mod:`.planning`, :mod:`.rows`, :mod:`.submit`, :mod:`.exactly_once`) work without it; :func:`register`
and :class:`RocketMQDataSource` need ``pip install 'pyrocketmq-k8s[spark]'``. Modules:
:mod:`.source` (the data source; :func:`offsets_behind_latest` turns a query's progress into the
Kafka source's lag numbers), :mod:`.broker_client` (pulls, offsets and sends through
:mod:`pyrocketmq.client`), :mod:`.transactional_sink` and :mod:`.exactly_once` (the
``deliveryGuarantee=exactlyOnce`` streaming sink), :mod:`.pipelines` (runnable jobs),
:mod:`.submit` (``spark-submit`` arguments for Kubernetes).
"""

from __future__ import annotations

from typing import Any

from .offsets import DataLossError, offsets_behind_latest

__all__ = ["DataLossError", "RocketMQDataSource", "offsets_behind_latest", "register"]

FORMAT = "pyrocketmq"


def register(spark: Any) -> None:
    """Register the ``pyrocketmq`` format with a SparkSession (once per session is enough).

    Example::

        register(spark)
        spark.read.format("pyrocketmq").option("nameServer", ns).option("topic", "T").load()
    """
    from .source import RocketMQDataSource

    spark.dataSource.register(RocketMQDataSource)


def __getattr__(name: str) -> Any:
    if name == "RocketMQDataSource":
        from .source import RocketMQDataSource

        return RocketMQDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
