import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * Batch send load generator, modelled on the BatchProducer of rocketmq-example 4.9.x (the 4.7.0 jar on
 * Maven Central has none): {@code threads} threads each send {@code batch} messages of {@code size}
 * bytes per request with DefaultMQProducer.send(Collection), synchronously.
 *
 * <p>Args: namesrv topic threads size batch seconds warmupSeconds [count]. Runs for {@code seconds}
 * (or until {@code count} messages went out when count > 0). Prints a progress line per second on
 * stderr and one JSON document on stdout: messages/s and per-request RT (avg, p50, p99, max) measured
 * after the warm-up. RTs go into 10 µs buckets up to 10 s.
 */
public final class BatchSend {
    private static final int BUCKET_US = 10;
    private static final int BUCKETS = 1_000_000;

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int threads = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        int batch = Integer.parseInt(args[4]);
        double seconds = Double.parseDouble(args[5]);
        double warmup = Double.parseDouble(args[6]);
        long count = args.length > 7 ? Long.parseLong(args[7]) : 0L;

        DefaultMQProducer producer = new DefaultMQProducer("bench_batch_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("bench-batch-" + System.nanoTime());
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.setMaxMessageSize(4 * 1024 * 1024);
        producer.setSendMsgTimeout(10_000);
        producer.start();

        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = (byte) ('a' + i % 26);
        }
        AtomicLongArray hist = new AtomicLongArray(BUCKETS + 1);
        AtomicLong sent = new AtomicLong();
        AtomicLong measuredMsgs = new AtomicLong();
        AtomicLong measuredReqs = new AtomicLong();
        AtomicLong rtSumNanos = new AtomicLong();
        AtomicLong rtMaxNanos = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicLong claimed = new AtomicLong();
        long start = System.nanoTime();
        long measureFrom = start + (long) (warmup * 1e9);
        long end = start + (long) (seconds * 1e9);
        long[] measureEnd = {0};

        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                while (true) {
                    long now = System.nanoTime();
                    if (count <= 0 && now >= end) {
                        return;
                    }
                    int n = batch;
                    if (count > 0) {
                        long before = claimed.getAndAdd(batch);
                        if (before >= count) {
                            return;
                        }
                        n = (int) Math.min(batch, count - before);
                    }
                    List<Message> msgs = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        msgs.add(new Message(topic, "TagA", body));
                    }
                    long t0 = System.nanoTime();
                    try {
                        SendResult r = producer.send(msgs);
                        long rt = System.nanoTime() - t0;
                        if (r.getSendStatus() != SendStatus.SEND_OK) {
                            failed.addAndGet(n);
                            continue;
                        }
                        sent.addAndGet(n);
                        if (t0 >= measureFrom || count > 0) {
                            measuredMsgs.addAndGet(n);
                            measuredReqs.incrementAndGet();
                            rtSumNanos.addAndGet(rt);
                            rtMaxNanos.accumulateAndGet(rt, Math::max);
                            hist.incrementAndGet((int) Math.min(BUCKETS, rt / 1000 / BUCKET_US));
                        }
                    } catch (Exception e) {
                        failed.addAndGet(n);
                        System.err.println("send failed: " + e);
                        try {
                            Thread.sleep(100);
                        } catch (InterruptedException ie) {
                            return;
                        }
                    }
                }
            }, "batch-sender-" + t);
            th.setDaemon(true);
            th.start();
            workers.add(th);
        }
        Thread reporter = new Thread(() -> {
            long prev = 0;
            while (true) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                long now = sent.get();
                System.err.printf("BatchSend TPS: %d sent: %d failed: %d%n", now - prev, now, failed.get());
                prev = now;
            }
        }, "reporter");
        reporter.setDaemon(true);
        reporter.start();
        for (Thread th : workers) {
            th.join();
        }
        long finished = System.nanoTime();
        reporter.interrupt();
        producer.shutdown();

        long from = count > 0 ? start : measureFrom;
        double window = (finished - from) / 1e9;
        long reqs = measuredReqs.get();
        StringBuilder json = new StringBuilder();
        json.append("{\"messages\":").append(measuredMsgs.get())
            .append(",\"sent\":").append(sent.get())
            .append(",\"failed\":").append(failed.get())
            .append(",\"seconds\":").append(String.format("%.3f", window))
            .append(",\"tps\":").append(String.format("%.1f", measuredMsgs.get() / Math.max(window, 1e-9)))
            .append(",\"requests\":").append(reqs)
            .append(",\"rt_avg_ms\":").append(String.format("%.3f", reqs == 0 ? 0.0 : rtSumNanos.get() / 1e6 / reqs))
            .append(",\"rt_p50_ms\":").append(String.format("%.3f", percentile(hist, reqs, 0.50)))
            .append(",\"rt_p99_ms\":").append(String.format("%.3f", percentile(hist, reqs, 0.99)))
            .append(",\"rt_max_ms\":").append(String.format("%.3f", rtMaxNanos.get() / 1e6))
            .append("}");
        System.out.println(json);
        System.exit(0);
    }

    static double percentile(AtomicLongArray hist, long total, double p) {
        if (total == 0) {
            return 0.0;
        }
        long rank = (long) Math.ceil(total * p);
        long seen = 0;
        for (int i = 0; i <= BUCKETS; i++) {
            seen += hist.get(i);
            if (seen >= rank) {
                return (i + 1) * BUCKET_US / 1000.0;
            }
        }
        return BUCKETS * BUCKET_US / 1000.0;
    }

    private BatchSend() {
    }
}
