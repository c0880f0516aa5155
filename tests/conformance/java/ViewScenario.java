import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Looks messages up the way mqadmin does (rocketmq-tools DefaultMQAdminExt).
 *
 * Usage: ViewScenario NAMESRV TOPIC KIND:ID...   (one JVM for any number of lookups)
 *   offset:ID  viewMessage(topic, offsetMsgId)       (VIEW_MESSAGE_BY_ID to the address inside the id)
 *   uniq:ID    queryMessageByUniqKey(topic, msgId)   (QUERY_MESSAGE with _UNIQUE_KEY_QUERY=true)
 *   key:KEY    queryMessage(topic, key)              (QUERY_MESSAGE through the KEYS index)
 *
 * Output: {"results": [{"kind", "id", "found", "error"?, "messages": [Common.describe(msg)...]}]}
 */
public class ViewScenario {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: ViewScenario NAMESRV TOPIC offset:ID|uniq:ID|key:KEY...");
            System.exit(2);
        }
        String topic = args[1];
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10000);
        admin.setNamesrvAddr(args[0]);
        admin.setVipChannelEnabled(false);
        admin.setInstanceName("view-" + System.nanoTime());
        admin.start();
        List<Map<String, Object>> results = new ArrayList<>();
        try {
            for (int i = 2; i < args.length; i++) {
                String[] kindAndId = args[i].split(":", 2);
                String kind = kindAndId[0];
                String id = kindAndId[1];
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("kind", kind);
                r.put("id", id);
                List<Map<String, Object>> found = new ArrayList<>();
                try {
                    if (kind.equals("offset")) {
                        MessageExt m = admin.viewMessage(topic, id);
                        if (m != null) {
                            found.add(Common.describe(m));
                        }
                    } else if (kind.equals("uniq") || kind.equals("key")) {
                        QueryResult q = kind.equals("uniq")
                            ? admin.queryMessageByUniqKey(topic, id, 32, 0, Long.MAX_VALUE)
                            : admin.queryMessage(topic, id, 32, 0, Long.MAX_VALUE);
                        for (MessageExt m : q.getMessageList()) {
                            found.add(Common.describe(m));
                        }
                    } else {
                        throw new IllegalArgumentException("unknown lookup kind " + kind);
                    }
                } catch (Exception e) {
                    r.put("error", e.toString());
                    Common.log("lookup of %s failed: %s", id, Common.stackTrace(e));
                }
                r.put("found", !found.isEmpty());
                r.put("messages", found);
                results.add(r);
            }
        } finally {
            admin.shutdown();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("results", results);
        Common.emit(out);
    }
}
