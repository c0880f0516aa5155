import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;

/**
 * Sync sends spread over many topics, a push consumer on a sample of them, and route lookups.
 *
 * <p>Args: namesrv prefix topicCount threads size seconds consumeSample routeSample group. Topics are
 * {@code prefix0 … prefix<topicCount-1>} (created before the broker started). Phases:
 * <ol>
 * <li>warm-up: one send to every topic (the client fetches each topic's route once), timed as a whole;</li>
 * <li>a DefaultMQPushConsumer subscribes to {@code consumeSample} topics spread over the range;</li>
 * <li>{@code threads} threads send {@code size} bytes for {@code seconds}, each send to a topic drawn at
 * random (the client picks the queue, so every queue of every topic gets messages);</li>
 * <li>{@code routeSample} GET_ROUTEINFO_BY_TOPIC lookups, one at a time, over topics spread over the range.</li>
 * </ol>
 * Prints one JSON document on stdout: send TPS and RT (avg, p99), failures, warm-up seconds, messages
 * consumed during the timed phase, route lookup p50/p99. RTs go into 10 µs buckets up to 10 s.
 */
public final class ManyTopics {
    private static final int BUCKET_US = 10;
    private static final int BUCKETS = 1_000_000;

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String prefix = args[1];
        int topicCount = Integer.parseInt(args[2]);
        int threads = Integer.parseInt(args[3]);
        int size = Integer.parseInt(args[4]);
        double seconds = Double.parseDouble(args[5]);
        int consumeSample = Math.min(topicCount, Integer.parseInt(args[6]));
        int routeSample = Integer.parseInt(args[7]);
        String group = args[8];

        DefaultMQProducer producer = new DefaultMQProducer("bench_topics_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("bench-topics-" + System.nanoTime());
        producer.setSendMsgTimeout(10_000);
        producer.start();
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'a');

        // 1. warm-up: every topic once (its route fetched, its first queue written)
        AtomicLong failed = new AtomicLong();
        AtomicLong next = new AtomicLong();
        long w0 = System.nanoTime();
        runThreads(threads, "warm", () -> {
            long i;
            while ((i = next.getAndIncrement()) < topicCount) {
                if (!send(producer, new Message(prefix + i, "TagA", body))) {
                    failed.incrementAndGet();
                }
            }
        });
        double warmupSeconds = (System.nanoTime() - w0) / 1e9;
        long warmupFailed = failed.getAndSet(0);

        // 2. a consumer on a sample of the topics
        AtomicLong consumed = new AtomicLong();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("bench-topics-consumer-" + System.nanoTime());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        for (int k = 0; k < consumeSample; k++) {
            consumer.subscribe(prefix + spread(k, consumeSample, topicCount), "*");
        }
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            consumed.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        if (consumeSample > 0) {
            consumer.start();
        }

        // 3. timed sends, each to a random topic
        AtomicLongArray hist = new AtomicLongArray(BUCKETS + 1);
        AtomicLong sent = new AtomicLong();
        AtomicLong rtSumNanos = new AtomicLong();
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        runThreads(threads, "send", () -> {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            while (System.nanoTime() < end) {
                Message msg = new Message(prefix + random.nextInt(topicCount), "TagA", body);
                long t0 = System.nanoTime();
                if (send(producer, msg)) {
                    long rt = System.nanoTime() - t0;
                    sent.incrementAndGet();
                    rtSumNanos.addAndGet(rt);
                    hist.incrementAndGet((int) Math.min(BUCKETS, rt / 1000 / BUCKET_US));
                } else {
                    failed.incrementAndGet();
                }
            }
        });
        double window = (System.nanoTime() - start) / 1e9;
        long consumedInWindow = consumed.get();

        // 4. route lookups, one at a time
        MQClientAPIImpl api = producer.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
        long[] lookups = new long[routeSample];
        int looked = 0;
        long routeFailed = 0;
        for (int k = 0; k < routeSample; k++) {
            String topic = prefix + spread(k, routeSample, topicCount);
            long t0 = System.nanoTime();
            try {
                api.getTopicRouteInfoFromNameServer(topic, 3000);
                lookups[looked++] = System.nanoTime() - t0;
            } catch (Exception e) {
                routeFailed++;
            }
        }
        long[] done = Arrays.copyOf(lookups, looked);
        Arrays.sort(done);
        if (consumeSample > 0) {
            consumer.shutdown();
        }
        producer.shutdown();

        long n = sent.get();
        StringBuilder json = new StringBuilder();
        json.append("{\"topics\":").append(topicCount)
            .append(",\"sent\":").append(n)
            .append(",\"failed\":").append(failed.get())
            .append(",\"seconds\":").append(fmt(window))
            .append(",\"tps\":").append(String.format("%.1f", n / Math.max(window, 1e-9)))
            .append(",\"rt_avg_ms\":").append(fmt(n == 0 ? 0.0 : rtSumNanos.get() / 1e6 / n))
            .append(",\"rt_p99_ms\":").append(fmt(percentile(hist, n, 0.99)))
            .append(",\"warmup_s\":").append(fmt(warmupSeconds))
            .append(",\"warmup_failed\":").append(warmupFailed)
            .append(",\"consumed\":").append(consumedInWindow)
            .append(",\"route_lookups\":").append(looked)
            .append(",\"route_failed\":").append(routeFailed)
            .append(",\"route_p50_ms\":").append(fmt(rank(done, 0.50)))
            .append(",\"route_p99_ms\":").append(fmt(rank(done, 0.99)))
            .append("}");
        System.out.println(json);
        System.exit(0);
    }

    /** The k-th of {@code sample} topic numbers spread evenly over {@code 0 … count-1}. */
    static long spread(int k, int sample, int count) {
        return (long) k * count / Math.max(1, sample);
    }

    static boolean send(DefaultMQProducer producer, Message msg) {
        try {
            SendResult r = producer.send(msg);
            return r.getSendStatus() == SendStatus.SEND_OK;
        } catch (Exception e) {
            System.err.println("send to " + msg.getTopic() + " failed: " + e);
            return false;
        }
    }

    static void runThreads(int threads, String name, Runnable body) throws InterruptedException {
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(body, name + "-" + t);
            th.setDaemon(true);
            th.start();
            workers.add(th);
        }
        for (Thread th : workers) {
            th.join();
        }
    }

    static String fmt(double v) {
        return String.format("%.3f", v);
    }

    static double rank(long[] sortedNanos, double p) {
        if (sortedNanos.length == 0) {
            return 0.0;
        }
        int i = (int) Math.min(sortedNanos.length - 1, Math.ceil(sortedNanos.length * p) - 1);
        return sortedNanos[Math.max(0, i)] / 1e6;
    }

    static double percentile(AtomicLongArray hist, long total, double p) {
        if (total == 0) {
            return 0.0;
        }
        long rankWanted = (long) Math.ceil(total * p);
        long seen = 0;
        for (int i = 0; i <= BUCKETS; i++) {
            seen += hist.get(i);
            if (seen >= rankWanted) {
                return (i + 1) * BUCKET_US / 1000.0;
            }
        }
        return BUCKETS * BUCKET_US / 1000.0;
    }

    private ManyTopics() {
    }
}
