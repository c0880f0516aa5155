import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * The official RocketMQ 5.x Java consumers against a gRPC endpoint.
 *
 * Usage: Consumer5Scenario ENDPOINT TOPIC GROUP MODE COUNT SECONDS [ARG] [TAG_EXPRESSION]
 *   simple         receive (invisible 10 s) and ack until COUNT acked or SECONDS passed
 *   simple-noack   receive COUNT messages with an invisible time of ARG seconds and ack none
 *   simple-half    receive COUNT messages (invisible ARG s), ack those with an even idx, leave the others
 *   simple-change  receive, change each one's invisible duration to 1 s, receive them again, ack
 *   push           a PushConsumer; a message fails (FAILURE) while its delivery attempt is <= ARG;
 *                  runs until COUNT messages succeeded or SECONDS passed, then 2 s + min(ARG, 5) s more
 * -Dbatch=N receives at most N at a time (16); -DworkMs=M spends M ms on each message before settling it.
 * Prints one JSON document as the last stdout line: {"deliveries": [{"messageId", "idx", "tag", "attempt",
 * "group", "ok"}], "errors": [...], "staleAck": bool}.
 */
public final class Consumer5Scenario {
    private static final long STARTED = System.currentTimeMillis();

    private Consumer5Scenario() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        String group = args[2];
        String mode = args[3];
        int count = Integer.parseInt(args[4]);
        long seconds = Long.parseLong(args[5]);
        int arg = args.length > 6 ? Integer.parseInt(args[6]) : 0;
        String tags = args.length > 7 ? args[7] : "*";
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration conf = Producer5Scenario.configuration(endpoint);
        FilterExpression filter = new FilterExpression(tags, FilterExpressionType.TAG);
        ConcurrentLinkedQueue<String> deliveries = new ConcurrentLinkedQueue<>();
        List<String> errors = new ArrayList<>();
        boolean staleAck = false;
        PushConsumer pushConsumer = null;
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        if (mode.equals("push")) {
            AtomicInteger ok = new AtomicInteger();
            PushConsumer consumer = provider.newPushConsumerBuilder().setClientConfiguration(conf).setConsumerGroup(group)
                .setSubscriptionExpressions(Collections.singletonMap(topic, filter))
                .setMessageListener(view -> {
                    boolean success = view.getDeliveryAttempt() > arg;
                    deliveries.add(describe(view, success));
                    if (success) {
                        ok.incrementAndGet();
                        return ConsumeResult.SUCCESS;
                    }
                    return ConsumeResult.FAILURE;
                }).build();
            while (System.currentTimeMillis() < deadline && ok.get() < count) {
                Thread.sleep(100);
            }
            Thread.sleep(2000L + Math.min(arg, 5) * 1000L); // nothing more may arrive: duplicates would show
            pushConsumer = consumer;
        } else {
            SimpleConsumer consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(conf)
                .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(3))
                .setSubscriptionExpressions(Collections.singletonMap(topic, filter)).build();
            int done = 0;
            Map<String, MessageView> changed = new ConcurrentHashMap<>();
            while (System.currentTimeMillis() < deadline && done < count) {
                boolean holds = mode.equals("simple-noack") || mode.equals("simple-half");
                Duration invisible = Duration.ofSeconds(holds ? arg : 10);
                List<MessageView> views;
                try {
                    views = consumer.receive(Integer.getInteger("batch", 16), invisible);
                } catch (Exception e) {
                    errors.add("receive: " + e);
                    continue;
                }
                for (MessageView view : views) {
                    deliveries.add(describe(view, true));
                    Thread.sleep(Long.getLong("workMs", 0L)); // -DworkMs: time spent on each message
                    try {
                        if (mode.equals("simple-noack")) {
                            done++;
                        } else if (mode.equals("simple-half")) {
                            if (Integer.parseInt(String.valueOf(view.getProperties().get("idx"))) % 2 == 0) {
                                consumer.ack(view);
                            }
                            done++;
                        } else if (mode.equals("simple-change") && !changed.containsKey(view.getMessageId().toString())) {
                            consumer.changeInvisibleDuration(view, Duration.ofSeconds(1));
                            changed.put(view.getMessageId().toString(), view);
                        } else {
                            consumer.ack(view);
                            done++;
                        }
                    } catch (Exception e) {
                        errors.add("settle " + view.getMessageId() + ": " + e);
                    }
                }
            }
            if (mode.equals("simple-change") && !changed.isEmpty()) {
                // the handle of a changed message is stale: acking with it must fail
                try {
                    consumer.ack(changed.values().iterator().next());
                } catch (Exception e) {
                    staleAck = true;
                }
            }
            consumer.close();
        }
        StringBuilder out = new StringBuilder("{\"deliveries\": [").append(String.join(", ", deliveries)).append("], \"errors\": [");
        for (int i = 0; i < errors.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(Producer5Scenario.quote(errors.get(i)));
        }
        System.out.println(out.append("], \"staleAck\": ").append(staleAck).append("}"));
        System.out.flush();
        if (pushConsumer != null) {
            // close() waits for the receive being long-polled (up to its polling timeout): give it 3 s
            Thread closer = new Thread(() -> {
                try {
                    Thread.sleep(3000);
                } catch (InterruptedException e) {
                    return;
                }
                Runtime.getRuntime().halt(0);
            });
            closer.setDaemon(true);
            closer.start();
            pushConsumer.close();
        }
    }

    private static String describe(MessageView view, boolean ok) {
        ByteBuffer body = view.getBody();
        byte[] bytes = new byte[body.remaining()];
        body.get(bytes);
        return "{\"messageId\": " + Producer5Scenario.quote(view.getMessageId().toString())
            + ", \"idx\": " + Producer5Scenario.quote(String.valueOf(view.getProperties().get("idx")))
            + ", \"tag\": " + Producer5Scenario.quote(view.getTag().orElse(""))
            + ", \"attempt\": " + view.getDeliveryAttempt()
            + ", \"group\": " + Producer5Scenario.quote(view.getMessageGroup().orElse(""))
            + ", \"body\": " + Producer5Scenario.quote(new String(bytes, StandardCharsets.UTF_8))
            + ", \"ok\": " + ok + ", \"atMs\": " + (System.currentTimeMillis() - STARTED) + "}";
    }
}
