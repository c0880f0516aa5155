import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.common.protocol.body.ProcessQueueInfo;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Asks a consumer for its running info the way mqadmin consumerStatus does (rocketmq-tools
 * DefaultMQAdminExt.getConsumerRunningInfo: GET_CONSUMER_RUNNING_INFO to a broker, which relays it
 * to the client) and reports what the Java side could decode.
 *
 * Usage: RunningInfoScenario NAMESRV GROUP CLIENT_ID
 *
 * Output: {"properties": {...}, "subscriptions": [topic...], "queues": [{"topic", "brokerName",
 *          "queueId", "commitOffset", "cachedMsgCount", "locked"}], "statusTopics": [topic...]}
 */
public class RunningInfoScenario {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: RunningInfoScenario NAMESRV GROUP CLIENT_ID");
            System.exit(2);
        }
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10000);
        admin.setNamesrvAddr(args[0]);
        admin.setVipChannelEnabled(false);
        admin.setInstanceName("running-info-" + System.nanoTime());
        admin.start();
        try {
            ConsumerRunningInfo info = admin.getConsumerRunningInfo(args[1], args[2], false);
            Map<String, Object> out = new LinkedHashMap<>();
            Map<String, Object> props = new LinkedHashMap<>();
            for (Map.Entry<Object, Object> e : info.getProperties().entrySet()) {
                props.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
            }
            out.put("properties", props);
            List<String> subs = new ArrayList<>();
            for (SubscriptionData sd : info.getSubscriptionSet()) {
                subs.add(sd.getTopic());
            }
            out.put("subscriptions", subs);
            List<Map<String, Object>> queues = new ArrayList<>();
            for (Map.Entry<MessageQueue, ProcessQueueInfo> e : info.getMqTable().entrySet()) {
                Map<String, Object> q = new LinkedHashMap<>();
                q.put("topic", e.getKey().getTopic());
                q.put("brokerName", e.getKey().getBrokerName());
                q.put("queueId", e.getKey().getQueueId());
                q.put("commitOffset", e.getValue().getCommitOffset());
                q.put("cachedMsgCount", e.getValue().getCachedMsgCount());
                q.put("locked", e.getValue().isLocked());
                queues.add(q);
            }
            out.put("queues", queues);
            out.put("statusTopics", new ArrayList<>(info.getStatusTable().keySet()));
            Common.emit(out);
        } finally {
            admin.shutdown();
        }
    }
}
