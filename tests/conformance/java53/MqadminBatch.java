import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Apache 5.3's mqadmin, several commands in one JVM (a JVM start per command costs seconds).
 *
 * Usage: MqadminBatch FILE
 *   FILE holds one command a line, its fields separated by TABs: first how it signs, then mqadmin's
 *   own arguments (e.g. "@yml  createUser  -b  127.0.0.1:10911  -u  alice  -p  pw").
 *     @yml       as mqadmin itself does: the accessKey/secretKey of ${rocketmq.home.dir}/conf/tools.yml
 *     @none      unsigned (an RPC hook that adds nothing)
 *     @NAME:PASS Java's AclClientRPCHook with that user's name and password
 * Each command's output (stdout and stderr alike) follows a line "=== mqadmin I" (I counts from 0) on
 * both streams; mqadmin prints a failed command's stack trace to stderr and goes on.
 */
public final class MqadminBatch {
    private static final RPCHook UNSIGNED = new RPCHook() {
        @Override
        public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
        }

        @Override
        public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
        }
    };

    private MqadminBatch() {
    }

    private static RPCHook hook(String signer) {
        if (signer.equals("yml")) {
            return null; // MQAdminStartup.main0 then reads conf/tools.yml, as the mqadmin script does
        }
        if (signer.equals("none")) {
            return UNSIGNED;
        }
        int colon = signer.indexOf(':');
        return new AclClientRPCHook(new SessionCredentials(signer.substring(0, colon), signer.substring(colon + 1)));
    }

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        int index = 0;
        for (String line : lines) {
            if (line.trim().isEmpty()) {
                continue;
            }
            List<String> fields = new ArrayList<>(Arrays.asList(line.split("\t")));
            String signer = fields.remove(0).substring(1);
            String marker = "=== mqadmin " + index++;
            System.out.println(marker);
            System.err.println(marker);
            System.out.flush();
            System.err.flush();
            MQAdminStartup.main0(fields.toArray(new String[0]), hook(signer));
            System.out.flush();
            System.err.flush();
        }
        System.exit(0); // the admin clients' non-daemon threads would keep the JVM alive
    }
}
