import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Three transactional messages with an unmodified TransactionMQProducer and its TransactionListener.
 *
 * Usage: TransactionScenario NAMESRV TOPIC GROUP WAIT_MS
 * Message kinds (user property "kind", body "tx-KIND"): commit (the local transaction commits),
 * rollback (it rolls back), check (it answers UNKNOW; checkLocalTransaction then commits it).
 * The program waits up to WAIT_MS for the broker's check of the "check" message.
 *
 * Output: {"sent": [{kind, status, localState, msgId, offsetMsgId, queueId, queueOffset}],
 *          "checked": ["KIND@TOPIC", ...], "checkArrived": bool}
 */
public class TransactionScenario {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: TransactionScenario NAMESRV TOPIC GROUP WAIT_MS");
            System.exit(2);
        }
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        long waitMs = Long.parseLong(args[3]);
        final List<String> checked = Collections.synchronizedList(new ArrayList<>());
        final CountDownLatch checkArrived = new CountDownLatch(1);

        TransactionMQProducer producer = new TransactionMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setVipChannelEnabled(false);
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                String kind = msg.getProperty("kind");
                if ("commit".equals(kind)) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
                if ("rollback".equals(kind)) {
                    return LocalTransactionState.ROLLBACK_MESSAGE;
                }
                return LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                String kind = msg.getProperty("kind");
                checked.add(kind + "@" + msg.getTopic());
                if ("check".equals(kind)) {
                    checkArrived.countDown();
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
                return LocalTransactionState.ROLLBACK_MESSAGE;
            }
        });
        producer.start();

        List<Map<String, Object>> sent = new ArrayList<>();
        for (String kind : new String[] {"commit", "rollback", "check"}) {
            Message msg = new Message(topic, "TagTx", ("tx-" + kind).getBytes(StandardCharsets.UTF_8));
            msg.putUserProperty("kind", kind);
            TransactionSendResult r = producer.sendMessageInTransaction(msg, null);
            Map<String, Object> rec = new LinkedHashMap<>();
            rec.put("kind", kind);
            rec.put("status", r.getSendStatus().name());
            rec.put("localState", r.getLocalTransactionState().name());
            rec.put("msgId", r.getMsgId());
            rec.put("offsetMsgId", r.getOffsetMsgId());
            rec.put("queueId", r.getMessageQueue().getQueueId());
            rec.put("queueOffset", r.getQueueOffset());
            sent.add(rec);
        }
        boolean arrived = checkArrived.await(waitMs, TimeUnit.MILLISECONDS);
        // the answer to the check is a oneway END_TRANSACTION sent from the check thread: let it go out
        Thread.sleep(1000);
        producer.shutdown();

        Map<String, Object> result = new LinkedHashMap<>();
        result.put("sent", sent);
        result.put("checked", new ArrayList<>(checked));
        result.put("checkArrived", arrived);
        Common.emit(result);
    }
}
