import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

/**
 * Drains a backlog with a DefaultMQPushConsumer set up as rocketmq-example's benchmark Consumer is
 * (defaults: 20 consume threads, pulls of 32, one message per listener call), and times it exactly:
 * the benchmark Consumer only prints 10 s windows, and committed offsets trail by up to 5 s.
 *
 * <p>Args: namesrv topic group expected timeoutSeconds. Stdout: one JSON document with the time from
 * consumer start and from the first message to the {@code expected}-th.
 */
public final class Drain {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        long expected = Long.parseLong(args[3]);
        long timeout = Long.parseLong(args[4]);

        AtomicLong received = new AtomicLong();
        AtomicLong firstAt = new AtomicLong();
        AtomicLong lastAt = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("bench-drain-" + System.nanoTime());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.nanoTime();
            firstAt.compareAndSet(0, now);
            long n = received.addAndGet(msgs.size());
            if (n >= expected) {
                lastAt.compareAndSet(0, now);
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        Thread reporter = new Thread(() -> {
            long prev = 0;
            while (true) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                long n = received.get();
                System.err.printf("Drain TPS: %d received: %d%n", n - prev, n);
                prev = n;
            }
        }, "reporter");
        reporter.setDaemon(true);
        long start = System.nanoTime();
        consumer.start();
        reporter.start();
        boolean ok = done.await(timeout, TimeUnit.SECONDS);
        long end = ok ? lastAt.get() : System.nanoTime();
        double fromStart = (end - start) / 1e9;
        double fromFirst = firstAt.get() == 0 ? 0.0 : (end - firstAt.get()) / 1e9;
        consumer.shutdown();
        System.out.printf("{\"received\":%d,\"expected\":%d,\"complete\":%s,\"seconds_from_start\":%.3f,"
                + "\"seconds_from_first\":%.3f,\"tps\":%.1f}%n",
            received.get(), expected, ok, fromStart, fromFirst, received.get() / Math.max(fromFirst, 1e-9));
        System.exit(ok ? 0 : 3);
    }

    private Drain() {
    }
}
