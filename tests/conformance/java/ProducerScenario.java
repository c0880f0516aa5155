import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;

/**
 * Sends messages with an unmodified DefaultMQProducer and reports what the broker answered.
 *
 * Usage: ProducerScenario NAMESRV TOPIC COUNT MODES [GROUP]
 *   MODES is a comma list of: sync (COUNT sync sends), async=N, oneway=N, batch=N (one batch send of N),
 *   big (one sync send of a 6000-byte body, which the client zlib-compresses).
 * Message i (i counts across all modes, in the order above): tags TagA/TagB/TagC by i % 3, keys "key-i",
 * user properties idx=i and p-unicode=h\u00e9llo, body "body-i" (UTF-8); with -Dtimer.delayMs=D also
 * TIMER_DELIVER_MS = now + D (a timer message).
 *
 * Output: {"sent": [{kind, idx, msgId, offsetMsgId, queueId, queueOffset, brokerName, status, tags, keys,
 *          bodySha1, bodyLen, error?}], "errors": n, "elapsedMs": ms}
 */
public class ProducerScenario {
    private static final String[] TAGS = {"TagA", "TagB", "TagC"};

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: ProducerScenario NAMESRV TOPIC COUNT MODES [GROUP]");
            System.exit(2);
        }
        String namesrv = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        Map<String, Integer> modes = parseModes(args[3], count);
        String group = args.length > 4 ? args[4] : "pg_" + topic;

        DefaultMQProducer producer = new DefaultMQProducer(group, Common.aclHook(), Boolean.getBoolean("trace.enable"), null);
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setVipChannelEnabled(false);
        producer.start();

        List<Map<String, Object>> sent = new ArrayList<>();
        long begin = System.currentTimeMillis();
        int idx = 0;
        int consecutiveErrors = 0;
        try {
            if (modes.containsKey("sync")) {
                for (int n = 0; n < modes.get("sync"); n++, idx++) {
                    Message msg = build(topic, idx, body(idx));
                    Map<String, Object> rec = record("sync", idx, msg);
                    try {
                        fill(rec, producer.send(msg));
                        consecutiveErrors = 0;
                    } catch (Exception e) {
                        rec.put("error", e.toString());
                        Common.log("sync send %d failed: %s", idx, Common.stackTrace(e));
                        if (++consecutiveErrors >= 5) {
                            sent.add(rec);
                            throw new IllegalStateException("5 consecutive send failures, giving up", e);
                        }
                    }
                    sent.add(rec);
                }
            }
            if (modes.containsKey("async")) {
                int n = modes.get("async");
                CountDownLatch done = new CountDownLatch(n);
                List<Map<String, Object>> batch = new ArrayList<>();
                for (int k = 0; k < n; k++, idx++) {
                    Message msg = build(topic, idx, body(idx));
                    final Map<String, Object> rec = record("async", idx, msg);
                    batch.add(rec);
                    producer.send(msg, new SendCallback() {
                        @Override
                        public void onSuccess(SendResult result) {
                            synchronized (rec) {
                                fill(rec, result);
                            }
                            done.countDown();
                        }

                        @Override
                        public void onException(Throwable e) {
                            synchronized (rec) {
                                rec.put("error", e.toString());
                            }
                            Common.log("async send failed: %s", Common.stackTrace(e));
                            done.countDown();
                        }
                    });
                }
                if (!done.await(60, TimeUnit.SECONDS)) {
                    Common.log("async sends did not all complete in 60 s");
                }
                for (Map<String, Object> rec : batch) {
                    synchronized (rec) {
                        // the uniq id is set on the Message during send; copy it if the callback never came
                        if (!rec.containsKey("status") && !rec.containsKey("error")) {
                            rec.put("error", "no callback within 60 s");
                        }
                        sent.add(rec);
                    }
                }
            }
            if (modes.containsKey("oneway")) {
                for (int n = 0; n < modes.get("oneway"); n++, idx++) {
                    Message msg = build(topic, idx, body(idx));
                    Map<String, Object> rec = record("oneway", idx, msg);
                    try {
                        producer.sendOneway(msg);
                        rec.put("status", "ONEWAY");
                    } catch (Exception e) {
                        rec.put("error", e.toString());
                    }
                    rec.put("msgId", MessageClientIDSetter.getUniqID(msg));
                    sent.add(rec);
                }
            }
            if (modes.containsKey("batch")) {
                List<Message> msgs = new ArrayList<>();
                List<Map<String, Object>> recs = new ArrayList<>();
                for (int n = 0; n < modes.get("batch"); n++, idx++) {
                    Message msg = build(topic, idx, body(idx));
                    msgs.add(msg);
                    recs.add(record("batch", idx, msg));
                }
                try {
                    SendResult r = producer.send(msgs);
                    String[] offsetIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
                    String[] uniqIds = r.getMsgId() == null ? new String[0] : r.getMsgId().split(",");
                    for (int j = 0; j < recs.size(); j++) {
                        Map<String, Object> rec = recs.get(j);
                        fill(rec, r);
                        rec.put("msgId", j < uniqIds.length ? uniqIds[j] : null);
                        rec.put("offsetMsgId", j < offsetIds.length ? offsetIds[j] : null);
                        rec.put("queueOffset", r.getQueueOffset() + j);
                    }
                } catch (Exception e) {
                    Common.log("batch send failed: %s", Common.stackTrace(e));
                    for (Map<String, Object> rec : recs) {
                        rec.put("error", e.toString());
                    }
                }
                sent.addAll(recs);
            }
            if (modes.containsKey("big")) {
                Message msg = build(topic, idx, bigBody(idx));
                Map<String, Object> rec = record("big", idx, msg);
                try {
                    fill(rec, producer.send(msg));
                } catch (Exception e) {
                    rec.put("error", e.toString());
                    Common.log("big send failed: %s", Common.stackTrace(e));
                }
                sent.add(rec);
                idx++;
            }
        } finally {
            producer.shutdown();
        }

        int errors = 0;
        for (Map<String, Object> rec : sent) {
            if (rec.containsKey("error")) {
                errors++;
            }
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("sent", sent);
        result.put("errors", errors);
        result.put("elapsedMs", System.currentTimeMillis() - begin);
        Common.emit(result);
    }

    private static Map<String, Integer> parseModes(String spec, int count) {
        Map<String, Integer> modes = new LinkedHashMap<>();
        for (String part : spec.split(",")) {
            part = part.trim();
            if (part.isEmpty()) {
                continue;
            }
            String[] kv = part.split("=", 2);
            int n = kv.length == 2 ? Integer.parseInt(kv[1]) : (kv[0].equals("sync") ? count : 1);
            modes.put(kv[0], n);
        }
        return modes;
    }

    static byte[] body(int idx) {
        return ("body-" + idx).getBytes(StandardCharsets.UTF_8);
    }

    /** 6000 printable bytes: compressible (so the client zlib-compresses it) but not trivially so. */
    static byte[] bigBody(int idx) {
        Random random = new Random(42L + idx);
        byte[] b = new byte[6000];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) ('a' + random.nextInt(16));
        }
        return b;
    }

    static Message build(String topic, int idx, byte[] body) {
        Message msg = new Message(topic, TAGS[idx % TAGS.length], "key-" + idx, body);
        msg.putUserProperty("idx", Integer.toString(idx));
        msg.putUserProperty("p-unicode", Common.UNICODE_VALUE);
        long timerDelayMs = Long.getLong("timer.delayMs", 0L);
        if (timerDelayMs > 0) {  // RocketMQ 5's timer property, set as a user property by a 4.x client
            msg.putUserProperty("TIMER_DELIVER_MS", Long.toString(System.currentTimeMillis() + timerDelayMs));
        }
        return msg;
    }

    private static Map<String, Object> record(String kind, int idx, Message msg) {
        Map<String, Object> rec = new LinkedHashMap<>();
        rec.put("kind", kind);
        rec.put("idx", idx);
        rec.put("tags", msg.getTags());
        rec.put("keys", msg.getKeys());
        rec.put("bodySha1", Common.sha1(msg.getBody()));
        rec.put("bodyLen", msg.getBody().length);
        return rec;
    }

    private static void fill(Map<String, Object> rec, SendResult r) {
        rec.put("status", r.getSendStatus().name());
        rec.put("msgId", r.getMsgId());
        rec.put("offsetMsgId", r.getOffsetMsgId());
        rec.put("queueId", r.getMessageQueue().getQueueId());
        rec.put("queueOffset", r.getQueueOffset());
        rec.put("brokerName", r.getMessageQueue().getBrokerName());
        rec.put("regionId", r.getRegionId());
        rec.put("traceOn", r.isTraceOn());
    }
}
