import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Asks a group's online consumers for the offsets they hold, the way `mqadmin getConsumerStatus` does
 * (DefaultMQAdminExt.getConsumeStatus: INVOKE_BROKER_TO_GET_CONSUMER_STATUS to the topic's brokers, which
 * ask each client with GET_CONSUMER_STATUS_FROM_CLIENT).
 *
 * Usage: ConsumerStatusScenario NAMESRV TOPIC GROUP [CLIENT_ID]
 * Output: {"status": {clientId: [{"brokerName", "queueId", "offset"}...]}} or {"error": "..."}
 */
public class ConsumerStatusScenario {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: ConsumerStatusScenario NAMESRV TOPIC GROUP [CLIENT_ID]");
            System.exit(2);
        }
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10000);
        admin.setNamesrvAddr(args[0]);
        admin.setVipChannelEnabled(false);
        admin.setInstanceName("status-" + System.nanoTime());
        admin.start();
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            Map<String, Map<MessageQueue, Long>> status = admin.getConsumeStatus(args[1], args[2], args.length > 3 ? args[3] : "");
            Map<String, Object> byClient = new LinkedHashMap<>();
            for (Map.Entry<String, Map<MessageQueue, Long>> e : status.entrySet()) {
                List<Map<String, Object>> queues = new ArrayList<>();
                for (Map.Entry<MessageQueue, Long> q : e.getValue().entrySet()) {
                    Map<String, Object> one = new LinkedHashMap<>();
                    one.put("brokerName", q.getKey().getBrokerName());
                    one.put("queueId", q.getKey().getQueueId());
                    one.put("offset", q.getValue());
                    queues.add(one);
                }
                byClient.put(e.getKey(), queues);
            }
            out.put("status", byClient);
        } catch (Exception e) {
            out.put("error", e.toString());
        } finally {
            admin.shutdown();
        }
        Common.emit(out);
    }
}
