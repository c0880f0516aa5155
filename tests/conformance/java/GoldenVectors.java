import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.File;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.common.DataVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.OffsetWrapper;
import org.apache.rocketmq.common.admin.TopicOffset;
import org.apache.rocketmq.common.admin.TopicStatsTable;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.compression.CompressorFactory;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.filter.FilterAPI;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageId;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.header.GetConsumerListByGroupResponseBody;
import org.apache.rocketmq.common.protocol.body.LockBatchRequestBody;
import org.apache.rocketmq.common.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.common.protocol.body.ResetOffsetBody;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.common.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.common.protocol.header.PullMessageResponseHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.common.protocol.header.SendMessageResponseHeader;
import org.apache.rocketmq.common.protocol.header.UpdateConsumerOffsetRequestHeader;
import org.apache.rocketmq.common.protocol.header.namesrv.GetRouteInfoRequestHeader;
import org.apache.rocketmq.common.protocol.heartbeat.ConsumeType;
import org.apache.rocketmq.common.protocol.heartbeat.ConsumerData;
import org.apache.rocketmq.common.protocol.heartbeat.HeartbeatData;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.common.protocol.heartbeat.ProducerData;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.common.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.common.sysflag.PullSysFlag;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * Writes golden vectors made by RocketMQ's own classes (rocketmq-client 4.9.8 closure).
 *
 * Usage: GoldenVectors OUT_DIR
 * Writes the binary/JSON files into OUT_DIR and prints {"vectors": [...]} (the descriptions) on stdout.
 * Every input is fixed (timestamps, offsets, hosts), so two runs give the same bytes; the only inputs
 * Java itself orders are HashMap/HashSet iterations, which are stable for fixed keys on one JDK.
 * tests/conformance/gen_golden.py post-processes the descriptions into tests/unit/golden/vectors.json.
 */
public class GoldenVectors {
    static final long BORN = 1700000000000L;
    static final long STORED = 1700000000123L;
    static final int VERSION = 409; // MQVersion.Version.V4_9_8.ordinal()

    private final File out;
    private final List<Map<String, Object>> vectors = new ArrayList<>();

    GoldenVectors(File out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        File out = new File(args[0]);
        out.mkdirs();
        GoldenVectors g = new GoldenVectors(out);
        g.commands();
        g.messages();
        g.bodies();
        g.small();
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("vectors", g.vectors);
        Common.emit(doc);
    }

    // ------------------------------------------------------------------ helpers

    void write(String name, byte[] data) throws Exception {
        Files.write(new File(out, name).toPath(), data);
    }

    Map<String, Object> vector(String name, String kind, String file) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", name);
        v.put("kind", kind);
        if (file != null) {
            v.put("file", file);
        }
        vectors.add(v);
        return v;
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    static void putBody(Map<String, Object> f, String prefix, byte[] body) {
        f.put(prefix + "_hex", body == null ? null : hex(body));
        if (body != null) {
            String text = new String(body, StandardCharsets.UTF_8);
            if (Arrays.equals(text.getBytes(StandardCharsets.UTF_8), body)) {
                f.put(prefix + "_utf8", text);
            }
        }
    }

    static InetSocketAddress addr(String ip, int port) throws Exception {
        return new InetSocketAddress(InetAddress.getByName(ip), port);
    }

    // ------------------------------------------------------------------ remoting commands

    /** Exactly what NettyEncoder writes for cmd: fastEncodeHeader + body. */
    static byte[] wire(RemotingCommand cmd) {
        ByteBuf buf = Unpooled.buffer();
        cmd.fastEncodeHeader(buf);
        if (cmd.getBody() != null) {
            buf.writeBytes(cmd.getBody());
        }
        byte[] bytes = new byte[buf.readableBytes()];
        buf.readBytes(bytes);
        return bytes;
    }

    void command(String name, RemotingCommand cmd, SerializeType type, String notes) throws Exception {
        cmd.setSerializeTypeCurrentRPC(type);
        byte[] bytes = wire(cmd);
        String file = name + ".bin";
        write(file, bytes);
        // decode back with RocketMQ itself (the frame minus its length field, as Netty's frame decoder hands it over)
        RemotingCommand d = RemotingCommand.decode(ByteBuffer.wrap(bytes, 4, bytes.length - 4).slice());
        Map<String, Object> v = vector(name, "remoting_command", file);
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("serializeType", d.getSerializeTypeCurrentRPC().name());
        f.put("code", d.getCode());
        f.put("language", d.getLanguage().name());
        f.put("version", d.getVersion());
        f.put("opaque", d.getOpaque());
        f.put("flag", d.getFlag());
        f.put("remark", d.getRemark());
        f.put("extFields", d.getExtFields() == null ? new HashMap<>() : d.getExtFields());
        putBody(f, "body", d.getBody());
        f.put("frameLength", ByteBuffer.wrap(bytes).getInt(0));
        f.put("headerLength", ByteBuffer.wrap(bytes).getInt(4) & 0xFFFFFF);
        v.put("fields", f);
        v.put("notes", notes);
    }

    static RemotingCommand request(int code, CommandCustomHeader header, int opaque) {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(code, header);
        cmd.setVersion(VERSION);
        cmd.setOpaque(opaque);
        return cmd;
    }

    static RemotingCommand response(int code, String remark, Class<? extends CommandCustomHeader> header, int opaque) {
        RemotingCommand cmd = RemotingCommand.createResponseCommand(code, remark, header);
        cmd.setVersion(VERSION);
        cmd.setOpaque(opaque);
        return cmd;
    }

    static String sampleProperties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put(MessageConst.PROPERTY_KEYS, "k1 k2");
        p.put(MessageConst.PROPERTY_TAGS, "TagA");
        p.put(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "0A0000051C8B6D06D69C0000A3F10001");
        p.put("p-unicode", Common.UNICODE_VALUE);
        return MessageDecoder.messageProperties2String(p);
    }

    void commands() throws Exception {
        for (SerializeType type : new SerializeType[] {SerializeType.JSON, SerializeType.ROCKETMQ}) {
            String suffix = type == SerializeType.JSON ? "json" : "rocketmq";

            SendMessageRequestHeader v1 = new SendMessageRequestHeader();
            v1.setProducerGroup("pg");
            v1.setTopic("TopicTest");
            v1.setDefaultTopic("TBW102");
            v1.setDefaultTopicQueueNums(4);
            v1.setQueueId(1);
            v1.setSysFlag(0);
            v1.setBornTimestamp(BORN);
            v1.setFlag(0);
            v1.setProperties(sampleProperties());
            v1.setReconsumeTimes(0);
            v1.setUnitMode(false);
            v1.setBatch(false);
            v1.setBname("broker-a");
            SendMessageRequestHeaderV2 v2 = SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(v1);
            RemotingCommand send = request(RequestCode.SEND_MESSAGE_V2, v2, 7);
            send.setBody("Hello RocketMQ".getBytes(StandardCharsets.UTF_8));
            command("cmd_send_v2_request_" + suffix, send, type,
                "SEND_MESSAGE_V2 (310) as DefaultMQProducer sends it; properties use \\u0001/\\u0002 separators");

            RemotingCommand legacy = request(RequestCode.SEND_MESSAGE, v1, 8);
            legacy.setBody("Hello RocketMQ".getBytes(StandardCharsets.UTF_8));
            command("cmd_send_v1_request_" + suffix, legacy, type,
                "SEND_MESSAGE (10), long field names (client with -Dorg.apache.rocketmq.client.sendSmartMsg=false)");

            RemotingCommand sendResp = response(ResponseCode.SUCCESS, null, SendMessageResponseHeader.class, 7);
            SendMessageResponseHeader srh = (SendMessageResponseHeader) sendResp.readCustomHeader();
            srh.setMsgId("7F00000100002A9F0000000000008AA2");
            srh.setQueueId(1);
            srh.setQueueOffset(1234L);
            sendResp.addExtField(MessageConst.PROPERTY_MSG_REGION, "DefaultRegion");
            sendResp.addExtField(MessageConst.PROPERTY_TRACE_SWITCH, "true");
            command("cmd_send_response_" + suffix, sendResp, type,
                "SUCCESS response to a send (flag bit 0 = response); MSG_REGION/TRACE_ON as the Java broker adds them");

            PullMessageRequestHeader pull = new PullMessageRequestHeader();
            pull.setConsumerGroup("cg");
            pull.setTopic("TopicTest");
            pull.setQueueId(2);
            pull.setQueueOffset(100L);
            pull.setMaxMsgNums(32);
            pull.setSysFlag(PullSysFlag.buildSysFlag(true, true, true, false));
            pull.setCommitOffset(90L);
            pull.setSuspendTimeoutMillis(15000L);
            pull.setSubscription("TagA || TagB");
            pull.setSubVersion(BORN);
            pull.setExpressionType("TAG");
            command("cmd_pull_request_" + suffix, request(RequestCode.PULL_MESSAGE, pull, 9), type,
                "PULL_MESSAGE (11) with sysFlag COMMIT_OFFSET|SUSPEND|SUBSCRIPTION (0x7)");

            RemotingCommand err = response(ResponseCode.TOPIC_NOT_EXIST,
                "No topic route info in name server for the topic: T-h\u00e9llo", null, 10);
            command("cmd_error_response_" + suffix, err, type,
                "TOPIC_NOT_EXIST (17) response with a non-ASCII remark and no extFields, no body");

            UpdateConsumerOffsetRequestHeader upd = new UpdateConsumerOffsetRequestHeader();
            upd.setConsumerGroup("cg");
            upd.setTopic("TopicTest");
            upd.setQueueId(0);
            upd.setCommitOffset(42L);
            RemotingCommand oneway = request(RequestCode.UPDATE_CONSUMER_OFFSET, upd, 11);
            oneway.markOnewayRPC();
            command("cmd_oneway_request_" + suffix, oneway, type,
                "UPDATE_CONSUMER_OFFSET (15) sent oneway (flag bit 1): never answered");
        }

        // the pull response: typed header + body = stored messages (see msg_pull_body.bin)
        RemotingCommand pullResp = response(ResponseCode.SUCCESS, null, PullMessageResponseHeader.class, 9);
        PullMessageResponseHeader prh = (PullMessageResponseHeader) pullResp.readCustomHeader();
        prh.setSuggestWhichBrokerId(0L);
        prh.setNextBeginOffset(103L);
        prh.setMinOffset(0L);
        prh.setMaxOffset(103L);
        pullResp.setBody(pullBody());
        command("cmd_pull_response_json", pullResp, SerializeType.JSON,
            "PULL_MESSAGE SUCCESS response; body is msg_pull_body.bin (3 stored messages)");

        GetRouteInfoRequestHeader route = new GetRouteInfoRequestHeader();
        route.setTopic("TopicTest");
        command("cmd_route_request_json", request(RequestCode.GET_ROUTEINFO_BY_TOPIC, route, 12), SerializeType.JSON,
            "GET_ROUTEINFO_BY_TOPIC (105) as MQClientAPIImpl sends it (version >= V4_9_4 => standard JSON answer)");

        RemotingCommand hb = request(RequestCode.HEART_BEAT, null, 13);
        hb.setBody(heartbeat().encode());
        command("cmd_heartbeat_request_json", hb, SerializeType.JSON,
            "HEART_BEAT (34); no extFields; body is body_heartbeat.json");
    }

    // ------------------------------------------------------------------ messages

    static MessageExt baseMessage() throws Exception {
        MessageExt m = new MessageExt();
        m.setTopic("TopicTest");
        m.setBody(("Hello RocketMQ " + Common.UNICODE_VALUE).getBytes(StandardCharsets.UTF_8));
        m.setFlag(0);
        m.setQueueId(2);
        m.setQueueOffset(100);
        m.setCommitLogOffset(567890L);
        m.setSysFlag(0);
        m.setBornTimestamp(BORN);
        m.setBornHost(addr("10.0.0.5", 54321));
        m.setStoreTimestamp(STORED);
        m.setStoreHost(addr("127.0.0.1", 10911));
        m.setReconsumeTimes(0);
        m.setPreparedTransactionOffset(0);
        m.setTags("TagA");
        m.setKeys("k1 k2");
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "0A0000051C8B6D06D69C0000A3F10001");
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_CLUSTER, "DefaultCluster");
        m.putUserProperty("p-unicode", Common.UNICODE_VALUE);
        m.setBodyCRC(UtilAll.crc32(m.getBody()));
        return m;
    }

    static Map<String, Object> messageFields(byte[] encoded, MessageExt m) throws Exception {
        // decode with RocketMQ to prove the bytes and to get what it derives (msgId, storeSize)
        MessageExt d = MessageDecoder.decode(ByteBuffer.wrap(encoded), true, false);
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("storeSize", d.getStoreSize());
        f.put("magicCode", "0xDAA320A7");
        f.put("bodyCRC", d.getBodyCRC());
        f.put("queueId", d.getQueueId());
        f.put("flag", d.getFlag());
        f.put("queueOffset", d.getQueueOffset());
        f.put("commitLogOffset", d.getCommitLogOffset());
        f.put("sysFlag", d.getSysFlag());
        f.put("bornTimestamp", d.getBornTimestamp());
        f.put("bornHost", Common.host(d.getBornHost()));
        f.put("storeTimestamp", d.getStoreTimestamp());
        f.put("storeHost", Common.host(d.getStoreHost()));
        f.put("reconsumeTimes", d.getReconsumeTimes());
        f.put("preparedTransactionOffset", d.getPreparedTransactionOffset());
        // MessageDecoder leaves body null for BODYLEN 0; the bytes hold an empty body
        putBody(f, "body", d.getBody() == null ? new byte[0] : d.getBody());
        f.put("topic", d.getTopic());
        f.put("properties", d.getProperties() == null ? new HashMap<>() : d.getProperties());
        f.put("propertiesString", MessageDecoder.messageProperties2String(m.getProperties()));
        f.put("msgId", d.getMsgId());
        return f;
    }

    static byte[] pullBody() throws Exception {
        List<MessageExt> msgs = pullMessages();
        List<byte[]> parts = new ArrayList<>();
        int total = 0;
        for (MessageExt m : msgs) {
            byte[] b = MessageDecoder.encode(m, false);
            parts.add(b);
            total += b.length;
        }
        ByteBuffer all = ByteBuffer.allocate(total);
        for (byte[] b : parts) {
            all.put(b);
        }
        return all.array();
    }

    /** Three consecutive records of one queue, as a pull returns them (offsets chained by size). */
    static List<MessageExt> pullMessages() throws Exception {
        MessageExt a = baseMessage();
        int sizeA = MessageDecoder.encode(a, false).length;

        MessageExt b = new MessageExt();
        b.setTopic("TopicTest");
        b.setBody(new byte[0]);
        b.setQueueId(2);
        b.setQueueOffset(101);
        b.setCommitLogOffset(a.getCommitLogOffset() + sizeA);
        b.setBornTimestamp(BORN + 1);
        b.setBornHost(addr("10.0.0.5", 54321));
        b.setStoreTimestamp(STORED + 1);
        b.setStoreHost(addr("127.0.0.1", 10911));
        b.setBodyCRC(UtilAll.crc32(b.getBody()));
        int sizeB = MessageDecoder.encode(b, false).length;

        MessageExt c = new MessageExt();
        c.setTopic("TopicTest");
        c.setBody("committed".getBytes(StandardCharsets.UTF_8));
        c.setFlag(7);
        c.setQueueId(2);
        c.setQueueOffset(102);
        c.setCommitLogOffset(b.getCommitLogOffset() + sizeB);
        c.setSysFlag(MessageSysFlag.TRANSACTION_COMMIT_TYPE);
        c.setBornTimestamp(BORN + 2);
        c.setBornHost(addr("10.0.0.5", 54321));
        c.setStoreTimestamp(STORED + 2);
        c.setStoreHost(addr("127.0.0.1", 10911));
        c.setReconsumeTimes(2);
        c.setPreparedTransactionOffset(4096L);
        c.setTags("TagB");
        MessageAccessor.putProperty(c, MessageConst.PROPERTY_TRANSACTION_PREPARED, "true");
        MessageAccessor.putProperty(c, MessageConst.PROPERTY_PRODUCER_GROUP, "tpg");
        c.setBodyCRC(UtilAll.crc32(c.getBody()));
        return Arrays.asList(a, b, c);
    }

    void messages() throws Exception {
        MessageExt m = baseMessage();
        byte[] b = MessageDecoder.encode(m, false);
        write("msg_ipv4.bin", b);
        Map<String, Object> v = vector("msg_ipv4", "message_ext", "msg_ipv4.bin");
        v.put("fields", messageFields(b, m));
        v.put("notes", "one stored message (commitlog record = pull body item), IPv4 born/store hosts");

        MessageExt m6 = baseMessage();
        m6.setSysFlag(MessageSysFlag.BORNHOST_V6_FLAG | MessageSysFlag.STOREHOSTADDRESS_V6_FLAG);
        m6.setBornHost(addr("fd00::5", 54321));
        m6.setStoreHost(addr("::1", 10911));
        byte[] b6 = MessageDecoder.encode(m6, false);
        write("msg_ipv6.bin", b6);
        v = vector("msg_ipv6", "message_ext", "msg_ipv6.bin");
        v.put("fields", messageFields(b6, m6));
        v.put("notes", "sysFlag 0x30: 16-byte born and store addresses (20 bytes with the port); msgId is 56 hex chars");

        // compressed: the body as the broker stores it (zlib, level 5, as the 4.9.8 producer sends > 4 KiB bodies)
        byte[] plain = ProducerScenario.bigBody(0);
        byte[] zipped = CompressorFactory.getCompressor(CompressionType.ZLIB).compress(plain, 5);
        MessageExt mz = baseMessage();
        mz.setSysFlag(MessageSysFlag.COMPRESSED_FLAG | MessageSysFlag.COMPRESSION_ZLIB_TYPE);
        mz.setBody(zipped);
        mz.setBodyCRC(UtilAll.crc32(zipped));
        byte[] bz = MessageDecoder.encode(mz, false);
        write("msg_compressed.bin", bz);
        write("msg_compressed.body.bin", plain);
        v = vector("msg_compressed", "message_ext", "msg_compressed.bin");
        Map<String, Object> fz = messageFields(bz, mz);
        MessageExt dz = MessageDecoder.decode(ByteBuffer.wrap(bz), true, true);
        fz.put("uncompressedBodyFile", "msg_compressed.body.bin");
        fz.put("uncompressedBodySha1", Common.sha1(dz.getBody()));
        v.put("fields", fz);
        v.put("notes", "sysFlag 0x301 = COMPRESSED | ZLIB type; body_hex is the stored (compressed) body and bodyCRC is "
            + "over it; MessageDecoder.decode(deCompressBody=true) yields msg_compressed.body.bin. Compressed bytes depend "
            + "on the zlib build: decode-compare only, do not byte-compare your own compression");

        byte[] pb = pullBody();
        write("msg_pull_body.bin", pb);
        v = vector("msg_pull_body", "message_ext_list", "msg_pull_body.bin");
        List<Map<String, Object>> items = new ArrayList<>();
        int pos = 0;
        for (MessageExt one : pullMessages()) {
            byte[] enc = MessageDecoder.encode(one, false);
            items.add(messageFields(enc, one));
            pos += enc.length;
        }
        List<MessageExt> decoded = MessageDecoder.decodes(ByteBuffer.wrap(pb));
        if (decoded.size() != 3 || pos != pb.length) {
            throw new IllegalStateException("pull body does not round-trip");
        }
        v.put("messages", items);
        v.put("notes", "3 consecutive records of queue 2 (offsets 100..102): a normal one, one with an empty body "
            + "and no properties (propertiesLength 0), a committed transactional one (sysFlag 0x8, "
            + "preparedTransactionOffset 4096, reconsumeTimes 2, flag 7)");

        // batch body (SEND_BATCH_MESSAGE request body)
        List<Message> batch = new ArrayList<>();
        Message b1 = new Message("TopicTest", "TagA", "key-0", "body-0".getBytes(StandardCharsets.UTF_8));
        b1.putUserProperty("idx", "0");
        MessageAccessor.putProperty(b1, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "0A0000051C8B6D06D69C0000A3F10002");
        Message b2 = new Message();
        b2.setTopic("TopicTest");
        b2.setFlag(5);
        b2.setBody("x".getBytes(StandardCharsets.UTF_8));
        Message b3 = new Message("TopicTest", "TagC", "key-2", ("body-2 " + Common.UNICODE_VALUE).getBytes(StandardCharsets.UTF_8));
        b3.setWaitStoreMsgOK(false);
        batch.add(b1);
        batch.add(b2);
        batch.add(b3);
        byte[] bb = MessageDecoder.encodeMessages(batch);
        write("batch_body.bin", bb);
        v = vector("batch_body", "batch_body", "batch_body.bin");
        List<Map<String, Object>> bitems = new ArrayList<>();
        for (Message one : MessageDecoder.decodeMessages(ByteBuffer.wrap(bb))) {
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("flag", one.getFlag());
            putBody(f, "body", one.getBody());
            f.put("properties", one.getProperties() == null ? new HashMap<>() : one.getProperties());
            bitems.add(f);
        }
        v.put("messages", bitems);
        v.put("notes", "MessageDecoder.encodeMessages: per message int totalSize, int magic (0), int bodyCRC (0), "
            + "int flag, int bodyLen, body, short propertiesLen, properties. The topic is not in the body "
            + "(it is in the request header). The second message has no properties (propertiesLen 0)");
    }

    // ------------------------------------------------------------------ JSON bodies

    static HeartbeatData heartbeat() throws Exception {
        HeartbeatData hb = new HeartbeatData();
        hb.setClientID("10.0.0.5@12345#987654321");
        LinkedHashSet<ProducerData> producers = new LinkedHashSet<>();
        ProducerData inner = new ProducerData();
        inner.setGroupName(MixAll.CLIENT_INNER_PRODUCER_GROUP);
        ProducerData pg = new ProducerData();
        pg.setGroupName("pg");
        producers.add(inner);
        producers.add(pg);
        hb.setProducerDataSet(producers);
        ConsumerData cd = new ConsumerData();
        cd.setGroupName("cg");
        cd.setConsumeType(ConsumeType.CONSUME_PASSIVELY);
        cd.setMessageModel(MessageModel.CLUSTERING);
        cd.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        cd.setUnitMode(false);
        SubscriptionData s1 = FilterAPI.buildSubscriptionData("TopicTest", "TagA || TagB");
        s1.setSubVersion(BORN);
        SubscriptionData s2 = FilterAPI.buildSubscriptionData("%RETRY%cg", "*");
        s2.setSubVersion(BORN);
        LinkedHashSet<SubscriptionData> subs = new LinkedHashSet<>();
        subs.add(s1);
        subs.add(s2);
        cd.setSubscriptionDataSet(subs);
        LinkedHashSet<ConsumerData> consumers = new LinkedHashSet<>();
        consumers.add(cd);
        hb.setConsumerDataSet(consumers);
        return hb;
    }

    static TopicRouteData route() {
        TopicRouteData r = new TopicRouteData();
        QueueData qa = new QueueData();
        qa.setBrokerName("broker-a");
        qa.setReadQueueNums(4);
        qa.setWriteQueueNums(4);
        qa.setPerm(6);
        qa.setTopicSysFlag(0);
        QueueData qb = new QueueData();
        qb.setBrokerName("broker-b");
        qb.setReadQueueNums(8);
        qb.setWriteQueueNums(8);
        qb.setPerm(6);
        qb.setTopicSysFlag(0);
        r.setQueueDatas(new ArrayList<>(Arrays.asList(qa, qb)));
        HashMap<Long, String> addrsA = new HashMap<>();
        addrsA.put(0L, "10.0.0.9:10911");
        addrsA.put(1L, "10.0.0.10:10911");
        HashMap<Long, String> addrsB = new HashMap<>();
        addrsB.put(0L, "10.0.0.11:10911");
        r.setBrokerDatas(new ArrayList<>(Arrays.asList(
            new BrokerData("DefaultCluster", "broker-a", addrsA),
            new BrokerData("DefaultCluster", "broker-b", addrsB))));
        r.setFilterServerTable(new HashMap<>());
        return r;
    }

    void json(String name, byte[] body, String type, String notes) throws Exception {
        String file = name + ".json";
        write(file, body);
        Map<String, Object> v = vector(name, "json_body", file);
        v.put("type", type);
        v.put("notes", notes);
    }

    void bodies() throws Exception {
        TopicRouteData r = route();
        json("body_topic_route_standard", r.encode(SerializerFeature.BrowserCompatible,
            SerializerFeature.QuoteFieldNames, SerializerFeature.SkipTransientField, SerializerFeature.MapSortField),
            "TopicRouteData", "what the 4.9.7 name server answers clients with version >= 401 (V4_9_4) or "
                + "acceptStandardJsonOnly=true");
        json("body_topic_route_legacy", RemotingSerializable.encode(r), "TopicRouteData",
            "what the name server answers older clients: fastjson default, brokerAddrs keys are BARE numbers "
                + "({0:\"...\"}): not standard JSON");

        json("body_heartbeat", heartbeat().encode(), "HeartbeatData",
            "a push consumer's heartbeat: producer groups CLIENT_INNER_PRODUCER and pg; consumer cg subscribed to "
                + "TopicTest 'TagA || TagB' (codeSet = String.hashCode of each tag) and %RETRY%cg '*'");

        ClusterInfo ci = new ClusterInfo();
        HashMap<String, BrokerData> bat = new HashMap<>();
        for (BrokerData bd : r.getBrokerDatas()) {
            bat.put(bd.getBrokerName(), bd);
        }
        ci.setBrokerAddrTable(bat);
        HashMap<String, java.util.Set<String>> cat = new HashMap<>();
        cat.put("DefaultCluster", new java.util.TreeSet<>(Arrays.asList("broker-a", "broker-b")));
        ci.setClusterAddrTable(cat);
        json("body_cluster_info", ci.encode(), "ClusterInfo", "GET_BROKER_CLUSTER_INFO (106) body, fastjson default "
            + "(brokerAddrs keys are bare numbers)");

        RegisterBrokerBody rb = new RegisterBrokerBody();
        TopicConfigSerializeWrapper w = new TopicConfigSerializeWrapper();
        DataVersion dv = new DataVersion();
        dv.setTimestamp(BORN);
        dv.setCounter(new AtomicLong(3));
        w.setDataVersion(dv);
        ConcurrentHashMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        topics.put("TopicTest", new TopicConfig("TopicTest", 4, 4, 6));
        topics.put("TBW102", new TopicConfig("TBW102", 8, 8, 7));
        w.setTopicConfigTable(topics);
        rb.setTopicConfigSerializeWrapper(w);
        json("body_register_broker", rb.encode(false), "RegisterBrokerBody", "REGISTER_BROKER (103) body, compressed=false");
        byte[] rbz = rb.encode(true);
        write("body_register_broker_compressed.bin", rbz);
        Map<String, Object> v = vector("body_register_broker_compressed", "register_broker_compressed",
            "body_register_broker_compressed.bin");
        RegisterBrokerBody back = RegisterBrokerBody.decode(rbz, true);
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("dataVersion", JSON.parseObject(back.getTopicConfigSerializeWrapper().getDataVersion().toJson()));
        List<String> encodedTopics = new ArrayList<>();
        for (TopicConfig tc : back.getTopicConfigSerializeWrapper().getTopicConfigTable().values()) {
            encodedTopics.add(tc.encode());
        }
        f.put("topicConfigs", encodedTopics);
        f.put("filterServerList", back.getFilterServerList());
        v.put("fields", f);
        v.put("notes", "REGISTER_BROKER body with compressed=true (only with compressedRegister): zlib (BEST_COMPRESSION) of "
            + "int len + DataVersion JSON, int topicCount, per topic int len + TopicConfig.encode() "
            + "('name readQueueNums writeQueueNums perm topicFilterType topicSysFlag order', space separated), "
            + "int len + filterServerList JSON");

        MessageQueue q0 = new MessageQueue("TopicTest", "broker-a", 0);
        MessageQueue q1 = new MessageQueue("TopicTest", "broker-a", 1);
        ConsumeStats cs = new ConsumeStats();
        OffsetWrapper o0 = new OffsetWrapper();
        o0.setBrokerOffset(100);
        o0.setConsumerOffset(90);
        o0.setLastTimestamp(STORED);
        OffsetWrapper o1 = new OffsetWrapper();
        o1.setBrokerOffset(50);
        o1.setConsumerOffset(50);
        o1.setLastTimestamp(0);
        cs.getOffsetTable().put(q0, o0);
        cs.getOffsetTable().put(q1, o1);
        cs.setConsumeTps(1.5);
        json("body_consume_stats", cs.encode(), "ConsumeStats",
            "fastjson writes HashMap<MessageQueue, ...> keys as JSON OBJECTS ({{\"brokerName\":...}:{...}}): not standard JSON");

        TopicStatsTable ts = new TopicStatsTable();
        TopicOffset t0 = new TopicOffset();
        t0.setMinOffset(0);
        t0.setMaxOffset(100);
        t0.setLastUpdateTimestamp(STORED);
        ts.getOffsetTable().put(q0, t0);
        json("body_topic_stats_table", ts.encode(), "TopicStatsTable", "same object-key form as ConsumeStats");

        ResetOffsetBody ro = new ResetOffsetBody();
        HashMap<MessageQueue, Long> rot = new HashMap<>();
        rot.put(q0, 42L);
        rot.put(q1, 7L);
        ro.setOffsetTable(rot);
        json("body_reset_offset", ro.encode(), "ResetOffsetBody", "same object-key form as ConsumeStats");

        LockBatchRequestBody lb = new LockBatchRequestBody();
        lb.setClientId("10.0.0.5@12345#987654321");
        lb.setConsumerGroup("cg");
        lb.getMqSet().add(q0);
        lb.getMqSet().add(q1);
        json("body_lock_batch_request", lb.encode(), "LockBatchRequestBody", "LOCK_BATCH_MQ (41) request body");

        GetConsumerListByGroupResponseBody cl = new GetConsumerListByGroupResponseBody();
        cl.setConsumerIdList(Arrays.asList("10.0.0.5@12345#987654321", "10.0.0.6@222#1"));
        json("body_consumer_list", cl.encode(), "GetConsumerListByGroupResponseBody", "GET_CONSUMER_LIST_BY_GROUP (38) body");

        SubscriptionGroupConfig sg = new SubscriptionGroupConfig();
        sg.setGroupName("cg");
        json("body_subscription_group_default", RemotingSerializable.encode(sg), "SubscriptionGroupConfig",
            "a SubscriptionGroupConfig with only groupName set: Java's defaults (fastjson has no toJson on it, so "
                + "JSON.toJSONString)");

        // fastjson parse observations: what a Java client accepts from a server
        observe("parse_consume_stats_object_keys", new String(cs.encode(), StandardCharsets.UTF_8), ConsumeStats.class);
        observe("parse_consume_stats_quoted_keys",
            "{\"consumeTps\":1.5,\"offsetTable\":{\"{\\\"brokerName\\\":\\\"broker-a\\\",\\\"queueId\\\":0,"
                + "\\\"topic\\\":\\\"TopicTest\\\"}\":{\"brokerOffset\":100,\"consumerOffset\":90,\"lastTimestamp\":0}}}",
            ConsumeStats.class);
        observe("parse_reset_offset_quoted_keys",
            "{\"offsetTable\":{\"{\\\"brokerName\\\":\\\"broker-a\\\",\\\"queueId\\\":0,\\\"topic\\\":\\\"TopicTest\\\"}\":42}}",
            ResetOffsetBody.class);
        observe("parse_topic_route_string_keys",
            new String(r.encode(SerializerFeature.BrowserCompatible, SerializerFeature.QuoteFieldNames,
                SerializerFeature.SkipTransientField, SerializerFeature.MapSortField), StandardCharsets.UTF_8),
            TopicRouteData.class);
        observe("parse_heartbeat_unknown_field",
            "{\"clientID\":\"c1\",\"extraField\":123,\"producerDataSet\":[{\"groupName\":\"pg\"}],\"consumerDataSet\":[]}",
            HeartbeatData.class);
    }

    /** Does fastjson (as the Java client uses it) accept this JSON for that class, and what does it read? */
    void observe(String name, String json, Class<?> type) {
        Map<String, Object> v = vector(name, "fastjson_parse", null);
        v.put("type", type.getSimpleName());
        v.put("input", json);
        try {
            Object parsed = RemotingSerializable.decode(json.getBytes(StandardCharsets.UTF_8), type);
            v.put("accepted", true);
            v.put("reserialized", JSON.toJSONString(parsed, SerializerFeature.MapSortField,
                SerializerFeature.WriteNonStringKeyAsString));
            if (parsed instanceof ConsumeStats) {
                v.put("offsetTableSize", ((ConsumeStats) parsed).getOffsetTable().size());
                v.put("offsetTableKeyTypes", keyTypes(((ConsumeStats) parsed).getOffsetTable()));
            } else if (parsed instanceof ResetOffsetBody) {
                v.put("offsetTableSize", ((ResetOffsetBody) parsed).getOffsetTable().size());
                v.put("offsetTableKeyTypes", keyTypes(((ResetOffsetBody) parsed).getOffsetTable()));
            }
        } catch (Throwable e) {
            v.put("accepted", false);
            v.put("error", e.toString());
        }
    }

    static List<String> keyTypes(Map<?, ?> m) {
        List<String> out = new ArrayList<>();
        for (Object k : m.keySet()) {
            out.add(k == null ? "null" : k.getClass().getSimpleName());
        }
        return out;
    }

    // ------------------------------------------------------------------ small values

    void small() throws Exception {
        // properties <-> string
        Map<String, String> props = new LinkedHashMap<>();
        props.put("KEYS", "k1 k2");
        props.put("TAGS", "TagA");
        props.put("p-unicode", Common.UNICODE_VALUE);
        props.put("WAIT", "true");
        props.put("skipped-null", null);
        String text = MessageDecoder.messageProperties2String(props);
        write("properties_basic.bin", text.getBytes(StandardCharsets.UTF_8));
        Map<String, Object> v = vector("properties_basic", "properties_string", "properties_basic.bin");
        props.remove("skipped-null");
        v.put("properties", props);
        v.put("text", text);
        v.put("notes", "messageProperties2String of an insertion-ordered map (a null value is skipped); "
            + "4.9.8 writes NO trailing \\u0002");

        String[] inputs = {
            "a\u0001b\u0002c\u0001d",
            "a\u0001b\u0002c\u0001d\u0002",
            "a\u0001\u0002c\u0001d",
            "\u0001x\u0002c\u0001d",
            "abc\u0002c\u0001d",
            "a\u0001b\u0001c",
            "a\u0001b\u0002\u0002c\u0001d",
            "ab\u0001",
            "",
        };
        for (int i = 0; i < inputs.length; i++) {
            Map<String, Object> p = vector("properties_parse_" + i, "properties_parse", null);
            p.put("input", inputs[i]);
            p.put("expected", MessageDecoder.string2messageProperties(inputs[i]));
        }

        // offset msgIds
        Object[][] ids = {
            {"127.0.0.1", 10911, 0L},
            {"10.0.0.5", 10911, 567890L},
            {"192.168.1.200", 65535, (1L << 40) + 7},
            {"::1", 10911, 123L},
            {"fd00::2", 30911, Long.MAX_VALUE},
        };
        for (Object[] id : ids) {
            String msgId = MessageDecoder.createMessageId(addr((String) id[0], (Integer) id[1]), (Long) id[2]);
            MessageId back = MessageDecoder.decodeMessageId(msgId);
            Map<String, Object> m = vector("offset_msg_id_" + id[0].toString().replace(':', '_').replace('.', '_'),
                "offset_msg_id", null);
            Map<String, Object> in = new LinkedHashMap<>();
            in.put("ip", ((InetSocketAddress) back.getAddress()).getAddress().getHostAddress());
            in.put("port", id[1]);
            in.put("commitLogOffset", back.getOffset());
            m.put("input", in);
            m.put("expected", msgId);
        }

        // UNIQ_KEY (client msgId) parsing
        String[] uniq = {"0A0000051C8B6D06D69C0000A3F10001", "FD00000000000000000000000000000217624E0E2F2A6C9918A30000"};
        for (String u : uniq) {
            Map<String, Object> m = vector("uniq_msg_id_" + u.length(), "uniq_msg_id", null);
            m.put("input", u);
            Map<String, Object> exp = new LinkedHashMap<>();
            exp.put("ip", MessageClientIDSetter.getIPStrFromID(u));
            exp.put("pid", MessageClientIDSetter.getPidFromID(u));
            m.put("expected", exp);
            m.put("notes", "layout: ip (4 or 16 bytes), pid int16, classloader hash int32, ms since the start of the "
                + "month int32, counter int16; uppercase hex");
        }

        // tag hash codes (consume queue tagsCode, subscription codeSet)
        String[] tags = {"TagA", "TagB", "TagC", "*", "", Common.UNICODE_VALUE, "\u4e2d\u6587", "TagA ",
            "a-very-long-tag-name-that-overflows-int32-arithmetic", "\ud83d\ude00"};
        for (int i = 0; i < tags.length; i++) {
            Map<String, Object> m = vector("tag_hash_" + i, "tag_hash", null);
            m.put("input", tags[i]);
            m.put("expected", tags[i].hashCode());
            m.put("notes", "Java String.hashCode over UTF-16 code units, int32 wrap-around");
        }

        // body CRC
        byte[][] crcs = {new byte[0], "body-0".getBytes(StandardCharsets.UTF_8),
            "Hello RocketMQ".getBytes(StandardCharsets.UTF_8), new byte[256]};
        for (int i = 0; i < 256; i++) {
            crcs[3][i] = (byte) i;
        }
        for (int i = 0; i < crcs.length; i++) {
            Map<String, Object> m = vector("crc32_" + i, "crc32", null);
            m.put("input_hex", hex(crcs[i]));
            m.put("expected", UtilAll.crc32(crcs[i]));
            m.put("notes", "UtilAll.crc32 = CRC32 & 0x7FFFFFFF (the BODYCRC field)");
        }
    }
}
