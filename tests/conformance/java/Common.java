import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Shared helpers of the conformance programs.
 *
 * Contract with the Python side (tests/conformance/jvm.py): a program writes exactly one JSON document
 * as the LAST line of stdout (UTF-8); everything else (client logs, progress) goes to stderr.
 */
final class Common {
    /** An ACL signing hook when -Dacl.accessKey and -Dacl.secretKey are given, else null (no ACL). */
    static org.apache.rocketmq.remoting.RPCHook aclHook() {
        String ak = System.getProperty("acl.accessKey");
        String sk = System.getProperty("acl.secretKey");
        if (ak == null || sk == null) {
            return null;
        }
        return new org.apache.rocketmq.acl.common.AclClientRPCHook(new org.apache.rocketmq.acl.common.SessionCredentials(ak, sk));
    }

    private Common() {
    }

    /** The same property values the producer sets; the consumer side compares against them. */
    static final String UNICODE_VALUE = "h\u00e9llo";

    static String sha1(byte[] data) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-1");
            StringBuilder sb = new StringBuilder();
            for (byte b : md.digest(data)) {
                sb.append(String.format("%02x", b & 0xff));
            }
            return sb.toString();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String host(SocketAddress address) {
        if (!(address instanceof InetSocketAddress)) {
            return address == null ? null : address.toString();
        }
        InetSocketAddress inet = (InetSocketAddress) address;
        String ip = inet.getAddress().getHostAddress();
        // IPv6 in brackets so the port stays unambiguous: [0:0:0:0:0:0:0:1]:10911 (Java's uncompressed text form)
        return (ip.indexOf(':') >= 0 ? "[" + ip + "]" : ip) + ":" + inet.getPort();
    }

    /** Properties a user set (everything but RocketMQ's reserved keys). */
    static Map<String, String> userProperties(Map<String, String> all) {
        Map<String, String> user = new HashMap<>();
        for (Map.Entry<String, String> e : all.entrySet()) {
            if (!MessageConst.STRING_HASH_SET.contains(e.getKey())) {
                user.put(e.getKey(), e.getValue());
            }
        }
        return user;
    }

    /** The fields the Python side compares, for a message read back from a broker. */
    static Map<String, Object> describe(MessageExt m) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("msgId", m.getMsgId());
        d.put("uniqKey", m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
        d.put("offsetMsgId", m instanceof org.apache.rocketmq.common.message.MessageClientExt
            ? ((org.apache.rocketmq.common.message.MessageClientExt) m).getOffsetMsgId() : null);
        d.put("topic", m.getTopic());
        d.put("queueId", m.getQueueId());
        d.put("queueOffset", m.getQueueOffset());
        d.put("commitLogOffset", m.getCommitLogOffset());
        d.put("tags", m.getTags());
        d.put("keys", m.getKeys());
        d.put("properties", new HashMap<>(m.getProperties()));
        d.put("userProperties", userProperties(m.getProperties()));
        d.put("bodySha1", sha1(m.getBody()));
        d.put("bodyLen", m.getBody().length);
        d.put("bodyCRC", m.getBodyCRC());
        d.put("sysFlag", m.getSysFlag());
        d.put("flag", m.getFlag());
        d.put("reconsumeTimes", m.getReconsumeTimes());
        d.put("storeHost", host(m.getStoreHost()));
        d.put("bornHost", host(m.getBornHost()));
        d.put("bornTimestamp", m.getBornTimestamp());
        d.put("storeTimestamp", m.getStoreTimestamp());
        d.put("storeSize", m.getStoreSize());
        return d;
    }

    /** Writes the result document as the last stdout line, in UTF-8 whatever the platform default. */
    static void emit(Object result) {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        out.println(JSON.toJSONString(result, SerializerFeature.DisableCircularReferenceDetect));
        out.flush();
    }

    static void log(String fmt, Object... args) {
        System.err.println(String.format(fmt, args));
    }

    static String stackTrace(Throwable t) {
        java.io.StringWriter sw = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(sw));
        return sw.toString();
    }
}
