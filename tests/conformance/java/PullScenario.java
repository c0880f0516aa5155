import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Reads a topic back from the beginning with an unmodified Java consumer.
 *
 * Usage: PullScenario NAMESRV TOPIC GROUP EXPECTED TIMEOUT_SECONDS [lite|pull]
 *   lite (default): DefaultLitePullConsumer, assign() every queue of fetchMessageQueues(), seekToBegin(), poll().
 *   pull:           DefaultMQPullConsumer, pull() each queue from minOffset until maxOffset.
 * Stops once EXPECTED distinct (queueId, queueOffset) messages were read, or at the timeout.
 *
 * Output: {"messages": [Common.describe(msg)...], "duplicates": n, "queues": [{queueId, minOffset?, maxOffset?}],
 *          "timedOut": bool, "elapsedMs": ms}
 */
public class PullScenario {
    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: PullScenario NAMESRV TOPIC GROUP EXPECTED TIMEOUT_SECONDS [lite|pull]");
            System.exit(2);
        }
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        int expected = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]) * 1000L;
        String mode = args.length > 5 ? args[5] : "lite";

        long begin = System.currentTimeMillis();
        Map<String, MessageExt> seen = new LinkedHashMap<>();
        List<Map<String, Object>> queues = new ArrayList<>();
        int[] duplicates = {0};
        if (mode.equals("lite")) {
            lite(namesrv, topic, group, expected, deadline, seen, duplicates, queues);
        } else if (mode.equals("pull")) {
            pull(namesrv, topic, group, expected, deadline, seen, duplicates, queues);
        } else {
            throw new IllegalArgumentException("unknown mode " + mode);
        }

        List<Map<String, Object>> out = new ArrayList<>();
        for (MessageExt m : seen.values()) {
            out.add(Common.describe(m));
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("messages", out);
        result.put("duplicates", duplicates[0]);
        result.put("queues", queues);
        result.put("timedOut", seen.size() < expected);
        result.put("elapsedMs", System.currentTimeMillis() - begin);
        Common.emit(result);
    }

    private static void add(Map<String, MessageExt> seen, int[] duplicates, MessageExt m) {
        String key = m.getQueueId() + "/" + m.getQueueOffset();
        if (seen.containsKey(key)) {
            duplicates[0]++;
        } else {
            seen.put(key, m);
        }
    }

    private static void lite(String namesrv, String topic, String group, int expected, long deadline,
        Map<String, MessageExt> seen, int[] duplicates, List<Map<String, Object>> queues) throws Exception {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group, Common.aclHook());
        consumer.setNamesrvAddr(namesrv);
        consumer.setVipChannelEnabled(false);
        consumer.setAutoCommit(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPullBatchSize(32);
        consumer.setPollTimeoutMillis(1000);
        consumer.start();
        try {
            Collection<MessageQueue> mqs = consumer.fetchMessageQueues(topic);
            consumer.assign(mqs);
            for (MessageQueue mq : mqs) {
                consumer.seekToBegin(mq);
                Map<String, Object> q = new HashMap<>();
                q.put("queueId", mq.getQueueId());
                q.put("brokerName", mq.getBrokerName());
                queues.add(q);
            }
            while (seen.size() < expected && System.currentTimeMillis() < deadline) {
                for (MessageExt m : consumer.poll(1000)) {
                    add(seen, duplicates, m);
                }
            }
        } finally {
            consumer.shutdown();
        }
    }

    private static void pull(String namesrv, String topic, String group, int expected, long deadline,
        Map<String, MessageExt> seen, int[] duplicates, List<Map<String, Object>> queues) throws Exception {
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setVipChannelEnabled(false);
        consumer.start();
        try {
            Collection<MessageQueue> mqs = consumer.fetchSubscribeMessageQueues(topic);
            Map<MessageQueue, Long> next = new HashMap<>();
            for (MessageQueue mq : mqs) {
                long min = consumer.minOffset(mq);
                next.put(mq, min);
                Map<String, Object> q = new HashMap<>();
                q.put("queueId", mq.getQueueId());
                q.put("brokerName", mq.getBrokerName());
                q.put("minOffset", min);
                queues.add(q);
            }
            while (seen.size() < expected && System.currentTimeMillis() < deadline) {
                boolean progressed = false;
                for (MessageQueue mq : mqs) {
                    long offset = next.get(mq);
                    PullResult r = consumer.pull(mq, "*", offset, 32, 10000);
                    switch (r.getPullStatus()) {
                        case FOUND:
                            for (MessageExt m : r.getMsgFoundList()) {
                                add(seen, duplicates, m);
                            }
                            progressed = true;
                            break;
                        case OFFSET_ILLEGAL:
                            Common.log("OFFSET_ILLEGAL on %s at %d (next %d)", mq, offset, r.getNextBeginOffset());
                            break;
                        default:
                            break;
                    }
                    next.put(mq, r.getNextBeginOffset());
                }
                if (!progressed) {
                    Thread.sleep(200);
                }
            }
            for (Map<String, Object> q : queues) {
                for (MessageQueue mq : mqs) {
                    if (mq.getQueueId() == (Integer) q.get("queueId")) {
                        q.put("maxOffset", consumer.maxOffset(mq));
                    }
                }
            }
        } finally {
            consumer.shutdown();
        }
    }
}
