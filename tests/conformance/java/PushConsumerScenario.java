import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Consumes a topic with an unmodified DefaultMQPushConsumer (clustering, from the first offset).
 *
 * Usage: PushConsumerScenario NAMESRV TOPIC GROUP concurrent|orderly EXPECTED TIMEOUT_SECONDS [FAIL_EVERY]
 *   concurrent: MessageListenerConcurrently; a message whose user property idx is a multiple of FAIL_EVERY
 *               (0 = none) is answered RECONSUME_LATER on its first delivery (reconsumeTimes 0), so the client
 *               sends it back (CONSUMER_SEND_MSG_BACK) and the broker redelivers it through %RETRY%GROUP.
 *   orderly:    MessageListenerOrderly (LOCK_BATCH_MQ before pulling); every message SUCCESS.
 * Stops once EXPECTED distinct idx values were consumed and every failed one came back, or at the timeout.
 *
 * Output: {"deliveries": [Common.describe(msg) + {"consumeThread"}...], "failed": [idx...],
 *          "timedOut": bool, "elapsedMs": ms}
 */
public class PushConsumerScenario {
    public static void main(String[] args) throws Exception {
        if (args.length < 6) {
            System.err.println("usage: PushConsumerScenario NAMESRV TOPIC GROUP concurrent|orderly EXPECTED TIMEOUT_SECONDS [FAIL_EVERY]");
            System.exit(2);
        }
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        final String mode = args[3];
        final int expected = Integer.parseInt(args[4]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[5]) * 1000L;
        final int failEvery = args.length > 6 ? Integer.parseInt(args[6]) : 0;

        final List<Map<String, Object>> deliveries = Collections.synchronizedList(new ArrayList<>());
        final Set<String> consumed = Collections.synchronizedSet(new HashSet<>());
        final Set<String> failed = Collections.synchronizedSet(new HashSet<>());
        final Set<String> redelivered = Collections.synchronizedSet(new HashSet<>());

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setVipChannelEnabled(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        long begin = System.currentTimeMillis();
        if (mode.equals("concurrent")) {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                ConsumeConcurrentlyStatus status = ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                for (MessageExt m : msgs) {
                    String idx = m.getUserProperty("idx");
                    Map<String, Object> d = Common.describe(m);
                    d.put("consumeThread", Thread.currentThread().getName());
                    deliveries.add(d);
                    boolean fail = failEvery > 0 && idx != null && Integer.parseInt(idx) % failEvery == 0
                        && m.getReconsumeTimes() == 0;
                    if (fail) {
                        failed.add(idx);
                        status = ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    } else {
                        consumed.add(idx);
                        if (m.getReconsumeTimes() > 0) {
                            redelivered.add(idx);
                        }
                    }
                }
                return status;
            });
        } else if (mode.equals("orderly")) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                for (MessageExt m : msgs) {
                    Map<String, Object> d = Common.describe(m);
                    d.put("consumeThread", Thread.currentThread().getName());
                    deliveries.add(d);
                    consumed.add(m.getUserProperty("idx"));
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            throw new IllegalArgumentException("unknown mode " + mode);
        }
        consumer.start();
        try {
            while (System.currentTimeMillis() < deadline) {
                if (consumed.size() >= expected && redelivered.containsAll(failed)) {
                    break;
                }
                Thread.sleep(100);
            }
        } finally {
            consumer.shutdown();
        }
        Map<String, Object> result = new LinkedHashMap<>();
        synchronized (deliveries) {
            result.put("deliveries", new ArrayList<>(deliveries));
        }
        result.put("failed", new ArrayList<>(failed));
        result.put("timedOut", !(consumed.size() >= expected && redelivered.containsAll(failed)));
        result.put("elapsedMs", System.currentTimeMillis() - begin);
        Common.emit(result);
    }
}
