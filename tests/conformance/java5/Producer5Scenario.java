import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.ProducerBuilder;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * The official RocketMQ 5.x Java producer against a gRPC endpoint.
 *
 * Usage: Producer5Scenario ENDPOINT TOPIC MODE COUNT [ARG]
 *   normal | async          COUNT messages (tag TagA or -Dtag=..., key k-i, property idx=i, body "m-i")
 *   fifo GROUPS             COUNT messages over GROUPS message groups (g-0 .. g-(GROUPS-1))
 *   delay DELAY_MS          COUNT messages delivered DELAY_MS after sending
 *   tx-commit | tx-rollback COUNT transactional messages, each committed / rolled back
 *   tx-orphan               COUNT transactional messages left open; the JVM halts without ending them
 *   tx-checker SECONDS      a transactional producer that answers the broker's check-backs with COMMIT
 *                           for SECONDS seconds (COUNT is how many checks to wait for at most)
 * The producer announces TOPIC as its publishing topic (another one with -Dannounce=TOPIC2).
 * Prints one JSON document as the last stdout line: {"sent": [{"idx", "messageId", "elapsedMs"}], "errors": [..],
 * "checked": [messageId..]}.
 */
public final class Producer5Scenario {
    private Producer5Scenario() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        String mode = args[2];
        int count = Integer.parseInt(args[3]);
        String extra = args.length > 4 ? args[4] : "0";
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration conf = Producer5Scenario.configuration(endpoint);
        ConcurrentLinkedQueue<String> checked = new ConcurrentLinkedQueue<>();
        ProducerBuilder builder = provider.newProducerBuilder().setClientConfiguration(conf)
            .setTopics(System.getProperty("announce", topic));
        boolean transactional = mode.startsWith("tx-");
        if (transactional) {
            builder.setTransactionChecker(view -> {
                checked.add(view.getMessageId().toString());
                System.err.println("check-back of " + view.getMessageId());
                return TransactionResolution.COMMIT;
            });
        }
        Producer producer = builder.build();
        List<String> sent = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        if (mode.equals("tx-checker")) {
            long deadline = System.currentTimeMillis() + Long.parseLong(extra) * 1000L;
            while (System.currentTimeMillis() < deadline && checked.size() < count) {
                Thread.sleep(100);
            }
            Thread.sleep(500); // the EndTransaction of the last check goes out
        } else {
            List<CompletableFuture<SendReceipt>> pending = new ArrayList<>();
            List<Long> started = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                MessageBuilder mb = provider.newMessageBuilder().setTopic(topic).setTag(System.getProperty("tag", "TagA")).setKeys("k-" + i)
                    .addProperty("idx", Integer.toString(i)).setBody(("m-" + i).getBytes(StandardCharsets.UTF_8));
                if (mode.equals("fifo")) {
                    mb.setMessageGroup("g-" + (i % Integer.parseInt(extra)));
                } else if (mode.equals("delay")) {
                    mb.setDeliveryTimestamp(System.currentTimeMillis() + Long.parseLong(extra));
                }
                Message message = mb.build();
                long begin = System.nanoTime();
                try {
                    if (mode.equals("async")) {
                        pending.add(producer.sendAsync(message));
                        started.add(begin);
                        continue;
                    }
                    if (transactional) {
                        Transaction tx = producer.beginTransaction();
                        SendReceipt receipt = producer.send(message, tx);
                        if (mode.equals("tx-commit")) {
                            tx.commit();
                        } else if (mode.equals("tx-rollback")) {
                            tx.rollback();
                        }
                        sent.add(entry(i, receipt, begin));
                    } else {
                        sent.add(entry(i, producer.send(message), begin));
                    }
                } catch (Exception e) {
                    errors.add(i + ": " + e);
                    e.printStackTrace();
                }
            }
            for (int i = 0; i < pending.size(); i++) {
                try {
                    sent.add(entry(i, pending.get(i).get(), started.get(i)));
                } catch (Exception e) {
                    errors.add(i + ": " + e);
                }
            }
        }
        StringBuilder out = new StringBuilder("{\"sent\": [").append(String.join(", ", sent)).append("], \"errors\": [");
        for (int i = 0; i < errors.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(quote(errors.get(i)));
        }
        out.append("], \"checked\": [");
        int n = 0;
        for (String id : checked) {
            out.append(n++ == 0 ? "" : ", ").append(quote(id));
        }
        System.out.println(out.append("]}"));
        System.out.flush();
        if (mode.equals("tx-orphan")) {
            Runtime.getRuntime().halt(0); // dies with its transactions open: the broker must check them back
        }
        producer.close();
    }

    private static String entry(int idx, SendReceipt receipt, long beginNanos) {
        long ms = (System.nanoTime() - beginNanos) / 1_000_000L;
        return "{\"idx\": " + idx + ", \"messageId\": " + quote(receipt.getMessageId().toString()) + ", \"elapsedMs\": " + ms + "}";
    }

    /** The endpoint, plaintext (TLS with -Dtls=true); signed with -Dacl.accessKey / -Dacl.secretKey when both are given. */
    static ClientConfiguration configuration(String endpoint) {
        org.apache.rocketmq.client.apis.ClientConfigurationBuilder b = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint).enableSsl(Boolean.getBoolean("tls")).setRequestTimeout(Duration.ofSeconds(10));
        String ak = System.getProperty("acl.accessKey");
        String sk = System.getProperty("acl.secretKey");
        if (ak != null && sk != null) {
            b.setCredentialProvider(new org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider(ak, sk));
        }
        return b.build();
    }

    static String quote(String s) {
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
