import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * Recall of a timer message with Apache RocketMQ 5.3's own 4.x-protocol producer (DefaultMQProducer.recallMessage,
 * request code RECALL_MESSAGE).
 *
 * Usage: Recall53Scenario NAMESRV TOPIC DELAY_MS
 * Sends "recalled" and "kept" due DELAY_MS later and "normal" now, recalls "recalled" by its SendResult's recall
 * handle, then recalls "kept" with a handle made for another topic (refused by the broker).
 * Prints one JSON document as the last stdout line: {"recalledId", "keptId", "recallHandle", "normalHandle",
 * "recalledAnswer", "wrongTopicCode", "wrongTopicRemark", "errors": [..]}.
 */
public final class Recall53Scenario {
    private Recall53Scenario() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        long delayMs = Long.parseLong(args[2]);
        List<String> errors = new ArrayList<>();
        DefaultMQProducer producer = new DefaultMQProducer("recall53-producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10_000);
        producer.start();
        long due = System.currentTimeMillis() + delayMs;
        SendResult recalled = producer.send(message(topic, "recalled", due));
        SendResult kept = producer.send(message(topic, "kept", due));
        SendResult normal = producer.send(message(topic, "normal", 0));
        String answer = "";
        try {
            answer = producer.recallMessage(topic, recalled.getRecallHandle());
        } catch (Exception e) {
            errors.add("recall: " + e);
        }
        String[] fields = new String(java.util.Base64.getUrlDecoder().decode(kept.getRecallHandle()),
            StandardCharsets.UTF_8).split(" ");
        String wrongTopic = java.util.Base64.getUrlEncoder().encodeToString(
            String.join(" ", fields[0], topic + "Other", fields[2], fields[3], fields[4]).getBytes(StandardCharsets.UTF_8));
        int wrongCode = 0;
        String wrongRemark = "";
        try {
            producer.recallMessage(topic, wrongTopic);
            errors.add("a handle of another topic was taken");
        } catch (MQBrokerException e) {
            wrongCode = e.getResponseCode();
            wrongRemark = e.getErrorMessage();
        }
        StringBuilder out = new StringBuilder("{")
            .append("\"recalledId\": ").append(quote(recalled.getMsgId()))
            .append(", \"keptId\": ").append(quote(kept.getMsgId()))
            .append(", \"recallHandle\": ").append(quote(String.valueOf(recalled.getRecallHandle())))
            .append(", \"normalHandle\": ").append(quote(String.valueOf(normal.getRecallHandle())))
            .append(", \"recalledAnswer\": ").append(quote(answer))
            .append(", \"wrongTopicCode\": ").append(wrongCode)
            .append(", \"wrongTopicRemark\": ").append(quote(wrongRemark))
            .append(", \"errors\": [");
        for (int i = 0; i < errors.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(quote(errors.get(i)));
        }
        System.out.println(out.append("]}"));
        System.out.flush();
        producer.shutdown();
    }

    private static Message message(String topic, String body, long due) {
        Message m = new Message(topic, "TagR", body.getBytes(StandardCharsets.UTF_8));
        if (due > 0) {
            m.setDeliverTimeMs(due);
        }
        return m;
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
