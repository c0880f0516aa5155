import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * End-to-end latency at a fixed send rate: one JVM holds a DefaultMQProducer sending {@code rate}
 * messages/s for {@code seconds} (synchronously, paced by intended send times, so a stall shows as
 * latency rather than as a lower rate) and a DefaultMQPushConsumer of a fresh group on the same topic.
 *
 * <p>Each body starts with the sender's System.nanoTime() (producer and consumer share the clock, so
 * the latency needs no millisecond born timestamp); the consumer records send→consume latency and
 * the broker's store→consume and born→store times from the message's own timestamps.
 *
 * <p>Args: namesrv topic group rate seconds size senders warmupSeconds. Stdout: one JSON document.
 */
public final class FixedRateLatency {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        int rate = Integer.parseInt(args[3]);
        double seconds = Double.parseDouble(args[4]);
        int size = Math.max(8, Integer.parseInt(args[5]));
        int senders = Integer.parseInt(args[6]);
        double warmup = Double.parseDouble(args[7]);

        int capacity = (int) (rate * (seconds + warmup) * 1.2) + 1024;
        long[] e2e = new long[capacity];
        long[] sendRt = new long[capacity];
        AtomicInteger e2eCount = new AtomicInteger();
        AtomicInteger rtCount = new AtomicInteger();
        AtomicLong received = new AtomicLong();
        AtomicLong sent = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicLong storeToConsumeSum = new AtomicLong();
        AtomicLong bornToStoreSum = new AtomicLong();

        long runStart = System.nanoTime();
        long measureFrom = runStart + (long) (warmup * 1e9);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("bench-latency-c-" + System.nanoTime());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.nanoTime();
            long wall = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                received.incrementAndGet();
                byte[] b = m.getBody();
                if (b == null || b.length < 8) {
                    continue;
                }
                long born = ByteBuffer.wrap(b, 0, 8).getLong();
                if (born < measureFrom) {
                    continue;
                }
                int i = e2eCount.getAndIncrement();
                if (i < e2e.length) {
                    e2e[i] = now - born;
                }
                storeToConsumeSum.addAndGet(wall - m.getStoreTimestamp());
                bornToStoreSum.addAndGet(m.getStoreTimestamp() - m.getBornTimestamp());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("bench_latency_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("bench-latency-p-" + System.nanoTime());
        producer.setSendMsgTimeout(10_000);
        producer.start();
        // let the consumer rebalance and reach the (empty) queue heads before the clock starts
        Thread.sleep(2000);

        long start = System.nanoTime();
        long total = (long) (rate * (seconds + warmup));
        long periodNanos = 1_000_000_000L / rate;
        long firstMeasured = start + (long) (warmup * 1e9);
        AtomicLong next = new AtomicLong();
        Thread[] threads = new Thread[senders];
        for (int t = 0; t < senders; t++) {
            threads[t] = new Thread(() -> {
                byte[] body = new byte[size];
                while (true) {
                    long k = next.getAndIncrement();
                    if (k >= total) {
                        return;
                    }
                    long intended = start + k * periodNanos;
                    long wait = intended - System.nanoTime();
                    if (wait > 0) {
                        try {
                            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                    long t0 = System.nanoTime();
                    ByteBuffer.wrap(body).putLong(t0 < firstMeasured ? 0L : t0);
                    try {
                        producer.send(new Message(topic, "TagA", body));
                        sent.incrementAndGet();
                        if (t0 >= firstMeasured) {
                            int i = rtCount.getAndIncrement();
                            if (i < sendRt.length) {
                                sendRt[i] = System.nanoTime() - t0;
                            }
                        }
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    }
                }
            }, "fixed-rate-sender-" + t);
            threads[t].start();
        }
        for (Thread th : threads) {
            th.join();
        }
        double sendSeconds = (System.nanoTime() - start) / 1e9;
        long deadline = System.currentTimeMillis() + 15_000;
        while (received.get() < sent.get() && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        producer.shutdown();
        consumer.shutdown();

        int n = Math.min(e2eCount.get(), e2e.length);
        long[] lat = Arrays.copyOf(e2e, n);
        Arrays.sort(lat);
        int r = Math.min(rtCount.get(), sendRt.length);
        long[] rts = Arrays.copyOf(sendRt, r);
        Arrays.sort(rts);
        double rtSum = 0;
        for (long v : rts) {
            rtSum += v;
        }
        StringBuilder json = new StringBuilder();
        json.append("{\"rate\":").append(rate)
            .append(",\"sent\":").append(sent.get())
            .append(",\"failed\":").append(failed.get())
            .append(",\"received\":").append(received.get())
            .append(",\"measured\":").append(n)
            .append(",\"achieved_tps\":").append(String.format("%.1f", sent.get() / sendSeconds))
            .append(",\"e2e_p50_ms\":").append(ms(pct(lat, 0.50)))
            .append(",\"e2e_p99_ms\":").append(ms(pct(lat, 0.99)))
            .append(",\"e2e_max_ms\":").append(ms(n == 0 ? 0 : lat[n - 1]))
            .append(",\"store_to_consume_avg_ms\":").append(String.format("%.3f", n == 0 ? 0.0 : storeToConsumeSum.get() / (double) n))
            .append(",\"born_to_store_avg_ms\":").append(String.format("%.3f", n == 0 ? 0.0 : bornToStoreSum.get() / (double) n))
            .append(",\"rt_avg_ms\":").append(String.format("%.3f", r == 0 ? 0.0 : rtSum / r / 1e6))
            .append(",\"rt_p99_ms\":").append(ms(pct(rts, 0.99)))
            .append("}");
        System.out.println(json);
        System.exit(0);
    }

    static long pct(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1);
        return sorted[Math.max(0, i)];
    }

    static String ms(long nanos) {
        return String.format("%.3f", nanos / 1e6);
    }

    private FixedRateLatency() {
    }
}
