import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.Connection;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Consumes a topic with an unmodified DefaultMQPushConsumer (clustering, from the first offset).
 *
 * Usage: PushConsumerScenario NAMESRV TOPIC GROUP concurrent|orderly|rewind EXPECTED TIMEOUT_SECONDS [FAIL_EVERY [SQL]]
 *   SQL:        subscribe with MessageSelector.bySql(SQL) instead of "*" (a selector the broker refuses makes
 *               start() throw: the program exits non-zero with the exception on stderr).
 *   concurrent: MessageListenerConcurrently; a message whose user property idx is a multiple of FAIL_EVERY
 *               (0 = none) is answered RECONSUME_LATER on its first delivery (reconsumeTimes 0), so the client
 *               sends it back (CONSUMER_SEND_MSG_BACK) and the broker redelivers it through %RETRY%GROUP.
 *   orderly:    MessageListenerOrderly (LOCK_BATCH_MQ before pulling); every message SUCCESS.
 *   rewind:     as concurrent without failures; once everything was consumed, DefaultMQAdminExt
 *               resetOffsetByTimestamp(TOPIC, GROUP, 0, force) (INVOKE_BROKER_TO_RESET_OFFSET; the broker
 *               tells this consumer with RESET_CONSUMER_CLIENT_OFFSET) and waits until everything was
 *               consumed a second time.
 * Stops once EXPECTED distinct idx values were consumed and every failed one came back, or at the timeout.
 * With -Dacl.accessKey/-Dacl.secretKey the consumer and the admin sign their requests (AclClientRPCHook).
 *
 * Output: {"deliveries": [Common.describe(msg) + {"consumeThread"}...], "failed": [idx...],
 *          "reset": {"brokerName/queueId": offset...}, "connections": [{clientId, language, version}],
 *          "subscriptions": [topic...], "runningInfo": {consumeType, queues, topics} (rewind only),
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
        final Set<String> consumedAgain = Collections.synchronizedSet(new HashSet<>());
        final boolean[] rewound = {false};
        Map<String, Object> reset = new LinkedHashMap<>();
        Map<String, Object> result = new LinkedHashMap<>();

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group, Common.aclHook(), new AllocateMessageQueueAveragely());
        consumer.setNamesrvAddr(namesrv);
        consumer.setVipChannelEnabled(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        if (args.length > 7) {
            consumer.subscribe(topic, MessageSelector.bySql(args[7]));
        } else {
            consumer.subscribe(topic, "*");
        }
        long begin = System.currentTimeMillis();
        if (mode.equals("concurrent") || mode.equals("rewind")) {
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
                        synchronized (rewound) {
                            if (rewound[0] && consumed.contains(idx)) {
                                consumedAgain.add(idx);
                            }
                        }
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
        try {
            consumer.start();
        } catch (Exception e) {  // the client's threads would keep the JVM alive
            System.err.println("start failed: " + e);
            System.exit(3);
        }
        try {
            while (System.currentTimeMillis() < deadline) {
                if (consumed.size() >= expected && redelivered.containsAll(failed)) {
                    break;
                }
                Thread.sleep(100);
            }
            if (mode.equals("rewind") && consumed.size() >= expected) {
                synchronized (rewound) {
                    rewound[0] = true;
                }
                DefaultMQAdminExt admin = new DefaultMQAdminExt(Common.aclHook(), 10000);
                admin.setNamesrvAddr(namesrv);
                admin.setVipChannelEnabled(false);
                admin.setInstanceName("push-scenario-admin");
                admin.start();
                try {
                    // who is connected (GET_CONSUMER_CONNECTION_LIST), and what one of them says about
                    // itself (GET_CONSUMER_RUNNING_INFO, relayed by the broker to the consumer)
                    ConsumerConnection cc = admin.examineConsumerConnectionInfo(group);
                    List<Map<String, Object>> conns = new ArrayList<>();
                    for (Connection c : cc.getConnectionSet()) {
                        Map<String, Object> one = new LinkedHashMap<>();
                        one.put("clientId", c.getClientId());
                        one.put("language", String.valueOf(c.getLanguage()));
                        one.put("version", c.getVersion());
                        conns.add(one);
                    }
                    result.put("connections", conns);
                    result.put("subscriptions", new ArrayList<>(cc.getSubscriptionTable().keySet()));
                    String clientId = cc.getConnectionSet().iterator().next().getClientId();
                    ConsumerRunningInfo info = admin.getConsumerRunningInfo(group, clientId, false);
                    Map<String, Object> running = new LinkedHashMap<>();
                    running.put("consumeType", info.getProperties().getProperty("PROP_CONSUME_TYPE"));
                    running.put("queues", info.getMqTable().size());
                    List<String> topics = new ArrayList<>();
                    for (SubscriptionData sd : info.getSubscriptionSet()) {
                        topics.add(sd.getTopic());
                    }
                    running.put("topics", topics);
                    result.put("runningInfo", running);
                    Map<MessageQueue, Long> table = admin.resetOffsetByTimestamp(topic, group, 0L, true);
                    for (Map.Entry<MessageQueue, Long> e : table.entrySet()) {
                        reset.put(e.getKey().getBrokerName() + "/" + e.getKey().getQueueId(), e.getValue());
                    }
                } finally {
                    admin.shutdown();
                }
                while (System.currentTimeMillis() < deadline && consumedAgain.size() < expected) {
                    Thread.sleep(100);
                }
            }
        } finally {
            consumer.shutdown();
        }
        synchronized (deliveries) {
            result.put("deliveries", new ArrayList<>(deliveries));
        }
        result.put("failed", new ArrayList<>(failed));
        result.put("reset", reset);
        boolean done = consumed.size() >= expected && redelivered.containsAll(failed)
            && (!mode.equals("rewind") || consumedAgain.size() >= expected);
        result.put("timedOut", !done);
        result.put("elapsedMs", System.currentTimeMillis() - begin);
        Common.emit(result);
    }
}
