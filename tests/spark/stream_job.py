"""A streaming driver for the kill-and-restart test: ``pyrocketmq`` topic → Parquet file sink.

Usage: ``python stream_job.py NAMESRV TOPIC OUT CHECKPOINT MAX_RECORDS (forever|available-now)``.
``forever`` runs micro-batches every 500 ms until the process is killed; ``available-now`` reads
what is there and exits 0.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from pyrocketmq.spark import register


def main(argv: list[str]) -> int:
    ns, topic, out, checkpoint, max_records, mode = argv
    spark = (
        SparkSession.builder.master("local[2]").appName("pyrocketmq-stream-job")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1").getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    df = (
        spark.readStream.format("pyrocketmq").option("nameServer", ns).option("topic", topic)
        .option("consumerGroup", "spark-kill-restart").option("startingOffsets", "earliest")
        .option("maxRecordsPerBatch", max_records).load()
        .selectExpr("CAST(body AS STRING) AS body", "queueId", "queueOffset")
    )
    writer = df.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
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
