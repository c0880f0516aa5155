import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * Sends one message at a time with an unmodified DefaultMQProducer (default settings) for a while,
 * through whatever happens to the brokers, and reports every acknowledged send.
 *
 * Usage: FailoverProducer NAMESRV TOPIC SECONDS [STOPFILE [PAUSE_MS]]
 * Stops after SECONDS, or sooner once STOPFILE exists; waits PAUSE_MS after each acknowledged send.
 * Body of send i: "java-i". Output: {"acked": [{body, queueId, queueOffset, offsetMsgId, atMs}],
 * "failures": n, "firstFailure": e}
 */
public class FailoverProducer {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: FailoverProducer NAMESRV TOPIC SECONDS [STOPFILE [PAUSE_MS]]");
            System.exit(2);
        }
        DefaultMQProducer producer = new DefaultMQProducer("failover_java_pg");
        producer.setNamesrvAddr(args[0]);
        producer.setVipChannelEnabled(false);
        producer.start();
        long end = System.currentTimeMillis() + Long.parseLong(args[2]) * 1000;
        java.io.File stop = args.length > 3 ? new java.io.File(args[3]) : null;
        long pause = args.length > 4 ? Long.parseLong(args[4]) : 0;
        List<Map<String, Object>> acked = new ArrayList<>();
        int failures = 0;
        String firstFailure = null;
        for (int i = 0; System.currentTimeMillis() < end && (stop == null || !stop.exists()); i++) {
            String body = "java-" + i;
            try {
                SendResult r = producer.send(new Message(args[1], body.getBytes(StandardCharsets.UTF_8)));
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    failures++;
                    continue;
                }
                Map<String, Object> rec = new LinkedHashMap<>();
                rec.put("body", body);
                rec.put("queueId", r.getMessageQueue().getQueueId());
                rec.put("queueOffset", r.getQueueOffset());
                rec.put("offsetMsgId", r.getOffsetMsgId());
                rec.put("atMs", System.currentTimeMillis());
                acked.add(rec);
                if (pause > 0) {
                    Thread.sleep(pause);
                }
            } catch (Exception e) {
                failures++;
                if (firstFailure == null) {
                    firstFailure = e.toString();
                }
                Thread.sleep(50);
            }
        }
        producer.shutdown();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("acked", acked);
        out.put("failures", failures);
        out.put("firstFailure", firstFailure);
        Common.emit(out);
    }
}
