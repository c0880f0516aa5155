import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.RecallReceipt;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * Recall of a delayed message with the official RocketMQ 5.x Java producer (Producer.recallMessage).
 *
 * Usage: Recall5Scenario ENDPOINT TOPIC GROUP DELAY_MS SECONDS
 * A SimpleConsumer of GROUP on TOPIC is started; then two messages due DELAY_MS later are sent ("recalled",
 * "kept") and a normal one ("normal"); the first is recalled with its receipt's recall handle, a recall with a
 * made-up handle is tried; then the consumer receives (and acks) for SECONDS seconds after the recall.
 * Prints one JSON document as the last stdout line: {"recalledId", "keptId", "recallHandle", "keptHandle",
 * "normalHandle", "recallReceiptId", "badRecall", "received": [{"messageId", "body", "atMs"}], "errors": [..]}
 * ("atMs": ms after the recall; "badRecall": the exception the made-up handle got).
 */
public final class Recall5Scenario {
    private Recall5Scenario() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        String group = args[2];
        long delayMs = Long.parseLong(args[3]);
        long seconds = Long.parseLong(args[4]);
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration conf = Producer5Scenario.configuration(endpoint);
        List<String> errors = new ArrayList<>();
        List<String> received = new ArrayList<>();
        SimpleConsumer consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(conf)
            .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(2))
            .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .build();
        Producer producer = provider.newProducerBuilder().setClientConfiguration(conf).setTopics(topic).build();
        long due = System.currentTimeMillis() + delayMs;
        SendReceipt recalled = producer.send(message(provider, topic, "recalled", due));
        SendReceipt kept = producer.send(message(provider, topic, "kept", due));
        SendReceipt normal = producer.send(message(provider, topic, "normal", 0));
        String receiptId = "";
        try {
            RecallReceipt receipt = producer.recallMessage(topic, recalled.getRecallHandle());
            receiptId = receipt.getMessageId().toString();
        } catch (Exception e) {
            errors.add("recall: " + e);
        }
        long recalledAt = System.currentTimeMillis();
        String badRecall = "";
        try {
            producer.recallMessage(topic, "bm90LWEtaGFuZGxl");
            errors.add("a made-up recall handle was taken");
        } catch (Exception e) {
            badRecall = e.toString();
        }
        while (System.currentTimeMillis() < recalledAt + seconds * 1000L) {
            List<MessageView> views;
            try {
                views = consumer.receive(16, Duration.ofSeconds(30));
            } catch (Exception e) {
                errors.add("receive: " + e);
                continue;
            }
            for (MessageView view : views) {
                ByteBuffer body = view.getBody();
                byte[] bytes = new byte[body.remaining()];
                body.get(bytes);
                received.add("{\"messageId\": " + Producer5Scenario.quote(view.getMessageId().toString())
                    + ", \"body\": " + Producer5Scenario.quote(new String(bytes, StandardCharsets.UTF_8))
                    + ", \"atMs\": " + (System.currentTimeMillis() - recalledAt) + "}");
                try {
                    consumer.ack(view);
                } catch (Exception e) {
                    errors.add("ack " + view.getMessageId() + ": " + e);
                }
            }
        }
        StringBuilder out = new StringBuilder("{")
            .append("\"recalledId\": ").append(Producer5Scenario.quote(recalled.getMessageId().toString()))
            .append(", \"keptId\": ").append(Producer5Scenario.quote(kept.getMessageId().toString()))
            .append(", \"recallHandle\": ").append(Producer5Scenario.quote(recalled.getRecallHandle()))
            .append(", \"keptHandle\": ").append(Producer5Scenario.quote(kept.getRecallHandle()))
            .append(", \"normalHandle\": ").append(Producer5Scenario.quote(String.valueOf(normal.getRecallHandle())))
            .append(", \"recallReceiptId\": ").append(Producer5Scenario.quote(receiptId))
            .append(", \"badRecall\": ").append(Producer5Scenario.quote(badRecall))
            .append(", \"received\": [").append(String.join(", ", received)).append("], \"errors\": [");
        for (int i = 0; i < errors.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(Producer5Scenario.quote(errors.get(i)));
        }
        System.out.println(out.append("]}"));
        System.out.flush();
        producer.close();
        consumer.close();
    }

    /** A message with body BODY, delivered at DUE (epoch ms) unless DUE is 0. */
    private static Message message(ClientServiceProvider provider, String topic, String body, long due) {
        org.apache.rocketmq.client.apis.message.MessageBuilder mb = provider.newMessageBuilder().setTopic(topic)
            .setTag("TagR").setKeys("k-" + body).setBody(body.getBytes(StandardCharsets.UTF_8));
        if (due > 0) {
            mb.setDeliveryTimestamp(due);
        }
        return mb.build();
    }
}
