import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Creates (or updates) a topic on one broker the way `mqadmin updateTopic -b` does, then waits until the
 * name server serves a route for it.
 *
 * Usage: AdminScenario NAMESRV BROKER_ADDR TOPIC QUEUES [PERM]
 * Output: {"topic", "queues", "perm", "route": {"queueDatas": [...], "brokerAddrs": {...}}, "waitedMs"}
 */
public class AdminScenario {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: AdminScenario NAMESRV BROKER_ADDR TOPIC QUEUES [PERM]");
            System.exit(2);
        }
        String brokerAddr = args[1];
        String topic = args[2];
        int queues = Integer.parseInt(args[3]);
        int perm = args.length > 4 ? Integer.parseInt(args[4]) : 6;

        DefaultMQAdminExt admin = new DefaultMQAdminExt(10000);
        admin.setNamesrvAddr(args[0]);
        admin.setVipChannelEnabled(false);
        admin.setInstanceName("admin-" + System.nanoTime());
        admin.start();
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            TopicConfig config = new TopicConfig(topic, queues, queues, perm);
            admin.createAndUpdateTopicConfig(brokerAddr, config);

            long begin = System.currentTimeMillis();
            TopicRouteData route = null;
            while (System.currentTimeMillis() - begin < 30000) {
                try {
                    route = admin.examineTopicRouteInfo(topic);
                    if (route != null && !route.getQueueDatas().isEmpty()) {
                        break;
                    }
                } catch (Exception e) {
                    Common.log("no route yet for %s: %s", topic, e);
                }
                Thread.sleep(100);
            }
            out.put("topic", topic);
            out.put("queues", queues);
            out.put("perm", perm);
            Map<String, Object> r = new LinkedHashMap<>();
            if (route != null) {
                java.util.List<Map<String, Object>> qds = new java.util.ArrayList<>();
                for (QueueData qd : route.getQueueDatas()) {
                    Map<String, Object> q = new LinkedHashMap<>();
                    q.put("brokerName", qd.getBrokerName());
                    q.put("readQueueNums", qd.getReadQueueNums());
                    q.put("writeQueueNums", qd.getWriteQueueNums());
                    q.put("perm", qd.getPerm());
                    qds.add(q);
                }
                r.put("queueDatas", qds);
                Map<String, String> addrs = new LinkedHashMap<>();
                route.getBrokerDatas().forEach(bd -> bd.getBrokerAddrs().forEach(
                    (id, addr) -> addrs.put(bd.getBrokerName() + "/" + id, addr)));
                r.put("brokerAddrs", addrs);
            }
            out.put("route", route == null ? null : r);
            out.put("waitedMs", System.currentTimeMillis() - begin);
        } finally {
            admin.shutdown();
        }
        Common.emit(out);
    }
}
