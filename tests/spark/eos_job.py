"""A streaming driver for the exactly-once tests: ``pyrocketmq`` topic → ``pyrocketmq`` topic with
``deliveryGuarantee=exactlyOnce``, on ``local[2,2]`` (a failed task is tried again once).

Usage: ``python eos_job.py NAMESRV SOURCE SINK CHECKPOINT MAX_RECORDS (forever|available-now)``;
the test hooks of :mod:`pyrocketmq.spark.transactional_sink` come from the environment.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from pyrocketmq.spark import register


def main(argv: list[str]) -> int:
    ns, source, sink, checkpoint, max_records, mode = argv
    spark = (
        SparkSession.builder.master("local[2,2]").appName("pyrocketmq-eos-job")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1").getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    df = (
        spark.readStream.format("pyrocketmq").option("nameServer", ns).option("topic", source)
        .option("startingOffsets", "earliest").option("maxRecordsPerBatch", max_records).load()
        .select("body", "keys")
    )
    writer = (df.writeStream.format("pyrocketmq").option("nameServer", ns).option("topic", sink)
              .option("deliveryGuarantee", "exactlyOnce").option("checkpointLocation", checkpoint))
    if mode == "forever":
        writer = writer.trigger(processingTime="500 milliseconds")
    else:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
