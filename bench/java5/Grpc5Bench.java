import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * Load from the official 5.x Java client over gRPC (the same program for both brokers).
 *
 * Usage: Grpc5Bench ENDPOINT TOPIC send THREADS SIZE SECONDS WARMUP
 *            THREADS threads each sending synchronously; counts the SECONDS after WARMUP
 *        Grpc5Bench ENDPOINT TOPIC fill COUNT SIZE
 *            COUNT messages with up to 256 async sends in flight (a backlog for receive)
 *        Grpc5Bench ENDPOINT TOPIC receive THREADS GROUP SECONDS WARMUP
 *            one SimpleConsumer, THREADS threads each receive(32, 30 s) and ack every message
 * Prints one JSON document as the last stdout line: {"tps", "rt_avg_ms", "rt_p99_ms", "count", "failed"}.
 */
public final class Grpc5Bench {
    private Grpc5Bench() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        String mode = args[2];
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration conf = ClientConfiguration.newBuilder().setEndpoints(endpoint).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
        if (mode.equals("receive")) {
            receive(provider, conf, topic, Integer.parseInt(args[3]), args[4], Double.parseDouble(args[5]),
                Double.parseDouble(args[6]));
        } else if (mode.equals("fill")) {
            fill(provider, conf, topic, Long.parseLong(args[3]), Integer.parseInt(args[4]));
        } else {
            send(provider, conf, topic, Integer.parseInt(args[3]), Integer.parseInt(args[4]), Double.parseDouble(args[5]),
                Double.parseDouble(args[6]));
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    private static void send(ClientServiceProvider provider, ClientConfiguration conf, String topic, int threads,
                             int size, double seconds, double warmup) throws Exception {
        Producer producer = provider.newProducerBuilder().setClientConfiguration(conf).setTopics(topic).build();
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'x');
        long start = System.nanoTime();
        long countFrom = start + (long) (warmup * 1e9);
        long end = countFrom + (long) (seconds * 1e9);
        AtomicLong failed = new AtomicLong();
        List<long[]> perThread = Collections.synchronizedList(new ArrayList<>());
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread w = new Thread(() -> {
                long[] rts = new long[1 << 20];
                int n = 0;
                Message msg = provider.newMessageBuilder().setTopic(topic).setTag("bench").setBody(body).build();
                while (true) {
                    long t0 = System.nanoTime();
                    if (t0 >= end) {
                        break;
                    }
                    try {
                        producer.send(msg);
                        long t1 = System.nanoTime();
                        if (t0 >= countFrom && n < rts.length) {
                            rts[n++] = t1 - t0;
                        }
                    } catch (Exception e) {
                        if (t0 >= countFrom) {
                            failed.incrementAndGet();
                        }
                    }
                }
                perThread.add(Arrays.copyOf(rts, n));
            });
            w.start();
            workers.add(w);
        }
        for (Thread w : workers) {
            w.join();
        }
        report(perThread, seconds, failed.get());
    }

    private static void fill(ClientServiceProvider provider, ClientConfiguration conf, String topic, long count,
                             int size) throws Exception {
        Producer producer = provider.newProducerBuilder().setClientConfiguration(conf).setTopics(topic).build();
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'x');
        Semaphore inFlight = new Semaphore(256);
        AtomicLong ok = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        long start = System.nanoTime();
        for (long i = 0; i < count; i++) {
            inFlight.acquire();
            Message msg = provider.newMessageBuilder().setTopic(topic).setTag("bench").setBody(body).build();
            producer.sendAsync(msg).whenComplete((r, e) -> {
                if (e == null) {
                    ok.incrementAndGet();
                } else {
                    failed.incrementAndGet();
                }
                inFlight.release();
            });
        }
        inFlight.acquire(256);
        double secs = (System.nanoTime() - start) / 1e9;
        System.out.println("{\"tps\": " + Math.round(ok.get() / secs) + ", \"count\": " + ok.get() + ", \"failed\": "
            + failed.get() + ", \"rt_avg_ms\": null, \"rt_p99_ms\": null}");
    }

    private static void receive(ClientServiceProvider provider, ClientConfiguration conf, String topic, int threads,
                                String group, double seconds, double warmup) throws Exception {
        SimpleConsumer consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(conf)
            .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .build();
        long start = System.nanoTime();
        long countFrom = start + (long) (warmup * 1e9);
        long end = countFrom + (long) (seconds * 1e9);
        AtomicLong failed = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        List<long[]> perThread = Collections.synchronizedList(new ArrayList<>());
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread w = new Thread(() -> {
                long[] rts = new long[1 << 22];
                int n = 0;
                while (!stop.get()) {
                    long t0 = System.nanoTime();
                    if (t0 >= end) {
                        break;
                    }
                    try {
                        List<MessageView> views = consumer.receive(32, Duration.ofSeconds(30));
                        for (MessageView v : views) {
                            consumer.ack(v);
                            long t1 = System.nanoTime();
                            if (t1 >= countFrom && t1 < end && n < rts.length) {
                                rts[n++] = t1 - t0; // receive + ack, per message
                            }
                        }
                    } catch (Exception e) {
                        if (t0 >= countFrom) {
                            failed.incrementAndGet();
                        }
                    }
                }
                perThread.add(Arrays.copyOf(rts, n));
            });
            w.start();
            workers.add(w);
        }
        for (Thread w : workers) {
            w.join();
        }
        report(perThread, seconds, failed.get());
    }

    private static void report(List<long[]> perThread, double seconds, long failed) {
        int total = 0;
        for (long[] a : perThread) {
            total += a.length;
        }
        long[] all = new long[total];
        int i = 0;
        for (long[] a : perThread) {
            System.arraycopy(a, 0, all, i, a.length);
            i += a.length;
        }
        Arrays.sort(all);
        double sum = 0;
        for (long v : all) {
            sum += v;
        }
        double avg = total == 0 ? 0 : sum / total / 1e6;
        double p99 = total == 0 ? 0 : all[Math.min(total - 1, (int) (total * 0.99))] / 1e6;
        System.out.println("{\"tps\": " + Math.round(total / seconds) + ", \"count\": " + total + ", \"failed\": " + failed
            + ", \"rt_avg_ms\": " + String.format("%.3f", avg) + ", \"rt_p99_ms\": " + String.format("%.3f", p99) + "}");
    }
}
