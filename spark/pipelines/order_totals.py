"""Order events → per-minute totals per tag → an output topic and Parquet.

Input: messages of ``--input-topic`` whose tag is the order's category and whose body is JSON
``{"orderId": "o-17", "amount": "12.50", "ts": 1763800000000}`` (``ts``: event time in ms; the
message's born time when absent). Output, one row per (minute, tag)::

    minute TIMESTAMP (UTC, start of the minute), tag STRING, orders BIGINT, total DECIMAL(28,2)

written as Parquet under ``--parquet`` and sent to ``--output-topic`` as JSON
(``{"minute": "2025-11-22T09:41:00Z", "tag": "books", "orders": 3, "total": "41.50"}``, tag =
the tag, key = ``<minute>|<tag>``, plus a de-duplication key per row).

Two modes:

- ``--mode batch`` (default): the offsets between ``--starting-offsets`` and the topic's end, in
  one job; the Parquet directory is overwritten. Rerunning it gives the same totals.
- ``--mode stream``: a streaming query (``--checkpoint`` required) with an event-time watermark;
  a minute is emitted once the watermark passes it (late events within ``--watermark`` still
  count). Each micro-batch overwrites ``<parquet>/batch=<id>``, so a replayed batch replaces its
  own output (the Parquet side is exactly-once); the topic side is at-least-once with stable
  de-duplication keys. ``--trigger available-now`` processes what is there and stops;
  ``--trigger 30s`` runs forever.

Run it locally (``local[*]`` is spark-submit's default)::

    spark-submit spark/pipelines/order_totals.py --name-server 127.0.0.1:9876 \\
        --input-topic Orders --output-topic OrderTotals --parquet /tmp/order-totals

On Kubernetes: ``spark/k8s/README.md`` (``spark-submit --master k8s://… --deploy-mode cluster``
or the ``SparkApplication`` in ``spark/k8s/order-totals.yaml``). The argument parsing is
importable without PySpark; everything that needs Spark imports it inside the functions.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

ORDER_SCHEMA = "orderId STRING, amount DECIMAL(18,2), ts BIGINT"
OUTPUT_COLUMNS = ("minute", "tag", "orders", "total")
UNTAGGED = "untagged"


@dataclass(frozen=True, slots=True)
class PipelineArgs:
    name_server: str
    input_topic: str = "Orders"
    output_topic: str = "OrderTotals"
    parquet: str = "/tmp/order-totals"
    mode: str = "batch"
    checkpoint: str | None = None
    starting_offsets: str = "earliest"
    group: str = "order-totals"
    max_records_per_batch: int | None = None
    watermark: str = "1 minute"
    trigger: str = "available-now"


def parse_args(argv: list[str]) -> PipelineArgs:
    """The pipeline's command line.

    >>> parse_args(["--name-server", "ns:9876"]).mode
    'batch'
    """
    p = argparse.ArgumentParser(prog="order_totals", description="Per-minute order totals per tag.")
    p.add_argument("--name-server", required=True, help="RocketMQ name server(s), host:port[;host:port]")
    p.add_argument("--input-topic", default="Orders")
    p.add_argument("--output-topic", default="OrderTotals")
    p.add_argument("--parquet", default="/tmp/order-totals", help="output directory (any Hadoop path: s3a://…)")
    p.add_argument("--mode", choices=("batch", "stream"), default="batch")
    p.add_argument("--checkpoint", help="checkpoint directory (stream mode)")
    p.add_argument("--starting-offsets", default="earliest", help="earliest | latest | group | JSON")
    p.add_argument(
        "--group", default="order-totals", help="consumer group whose offsets show progress (stream)"
    )
    p.add_argument("--max-records-per-batch", type=int, help="admission control per micro-batch (stream)")
    p.add_argument("--watermark", default="1 minute", help="how late an event may come (stream)")
    p.add_argument(
        "--trigger", default="available-now", help="available-now, or an interval such as 30s (stream)"
    )
    ns = p.parse_args(argv)
    if ns.mode == "stream" and not ns.checkpoint:
        p.error("--mode stream needs --checkpoint DIR")
    return PipelineArgs(**{k: v for k, v in vars(ns).items()})


def per_minute_totals(orders: Any, watermark: str | None = None) -> Any:
    """Source rows (``pyrocketmq`` schema) → ``minute, tag, orders, total``."""
    from pyspark.sql import functions as F

    parsed = orders.select(
        F.coalesce(F.col("tags"), F.lit(UNTAGGED)).alias("tag"),
        F.from_json(F.col("body").cast("string"), ORDER_SCHEMA).alias("o"),
        F.col("bornTimestamp"),
    ).select(
        "tag",
        F.col("o.amount").alias("amount"),
        F.coalesce(F.timestamp_millis(F.col("o.ts")), F.col("bornTimestamp")).alias("eventTime"),
    )
    if watermark:
        parsed = parsed.withWatermark("eventTime", watermark)
    return (
        parsed.groupBy(F.window("eventTime", "1 minute"), "tag")
        .agg(F.count(F.lit(1)).alias("orders"), F.sum("amount").cast("decimal(28,2)").alias("total"))
        .select(F.col("window.start").alias("minute"), "tag", "orders", "total")
    )


def as_messages(totals: Any) -> Any:
    """Totals → writer rows (``body, tags, keys``) for the ``pyrocketmq`` sink."""
    from pyspark.sql import functions as F

    minute = F.date_format(F.col("minute"), "yyyy-MM-dd'T'HH:mm:ss'Z'")
    body = F.to_json(
        F.struct(minute.alias("minute"), "tag", "orders", F.col("total").cast("string").alias("total"))
    )
    return totals.select(body.alias("body"), F.col("tag").alias("tags"),
                         F.concat_ws("|", minute, F.col("tag")).alias("keys"))


def _writer_options(args: PipelineArgs, batch_id: str) -> dict[str, str]:
    return {"nameServer": args.name_server, "topic": args.output_topic, "dedupKey": "true",
            "dedupKeyPrefix": "order-totals", "batchId": batch_id}


def run_batch(spark: Any, args: PipelineArgs) -> None:
    orders = (spark.read.format("pyrocketmq").option("nameServer", args.name_server)
              .option("topic", args.input_topic).option("startingOffsets", args.starting_offsets).load())
    totals = per_minute_totals(orders).cache()
    totals.write.mode("overwrite").parquet(args.parquet)
    as_messages(totals).write.format("pyrocketmq").options(**_writer_options(args, "batch")).mode(
        "append"
    ).save()
    totals.unpersist()


def run_stream(spark: Any, args: PipelineArgs) -> None:
    reader = (spark.readStream.format("pyrocketmq").option("nameServer", args.name_server)
              .option("topic", args.input_topic).option("consumerGroup", args.group)
              .option("startingOffsets", args.starting_offsets))
    if args.max_records_per_batch:
        reader = reader.option("maxRecordsPerBatch", args.max_records_per_batch)
    totals = per_minute_totals(reader.load(), args.watermark)

    def emit(batch: Any, batch_id: int) -> None:
        batch = batch.cache()
        if batch.take(1):
            batch.write.mode("overwrite").parquet(f"{args.parquet.rstrip('/')}/batch={batch_id}")
            (as_messages(batch).write.format("pyrocketmq").options(**_writer_options(args, f"b{batch_id}"))
             .mode("append").save())
        batch.unpersist()

    writer = (totals.writeStream.outputMode("append").foreachBatch(emit)
              .option("checkpointLocation", args.checkpoint))
    if args.trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=args.trigger)
    writer.start().awaitTermination()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from pyspark.sql import SparkSession

    from pyrocketmq.spark import register

    spark = (SparkSession.builder.appName(f"order-totals-{args.mode}")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    register(spark)
    try:
        if args.mode == "batch":
            run_batch(spark, args)
        else:
            run_stream(spark, args)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
