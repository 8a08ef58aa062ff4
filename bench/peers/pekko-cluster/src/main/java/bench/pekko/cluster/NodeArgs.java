package bench.pekko.cluster;

import java.util.ArrayList;
import java.util.List;

/** The command line of {@code cluster-node}. */
final class NodeArgs {
    static final String USAGE = String.join("\n",
            "usage: java -jar pekko-cluster-bench.jar cluster-node --port P [--bind-port B]",
            "           --seeds HOST:PORT[,HOST:PORT...] [--heartbeat-ms 1000] [--pause-ms 3000]",
            "           [--stable-after-ms 7000]",
            "  --port         the canonical port: the address the other members dial",
            "  --bind-port    the port Artery listens on (default: --port); differs when a",
            "                 relay sits in front of this node",
            "  --seeds        the seed nodes, all on 127.0.0.1's system " + ClusterNode.SYSTEM,
            "stdin, one command per line: register | leave | stream HOST:PORT | stop | received",
            "           | exit (end of input = exit)",
            "stdout: one JSON object per line per cluster event (see bench/peers/README.md)");

    int port;
    int bindPort = -1;
    List<String> seeds = new ArrayList<>();
    long heartbeatMs = 1000;
    long pauseMs = 3000;
    long stableAfterMs = 7000;

    private NodeArgs() {}

    static NodeArgs parse(String[] argv) {
        if (argv.length == 0 || !argv[0].equals("cluster-node")) {
            throw new IllegalArgumentException("the only command is cluster-node");
        }
        NodeArgs a = new NodeArgs();
        boolean portGiven = false;
        for (int i = 1; i < argv.length; i += 2) {
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException(argv[i] + " needs a value");
            }
            String value = argv[i + 1];
            switch (argv[i]) {
                case "--port" -> {
                    a.port = number(argv[i], value);
                    portGiven = true;
                }
                case "--bind-port" -> a.bindPort = number(argv[i], value);
                case "--seeds" -> a.seeds = List.of(value.split(","));
                case "--heartbeat-ms" -> a.heartbeatMs = number(argv[i], value);
                case "--pause-ms" -> a.pauseMs = number(argv[i], value);
                case "--stable-after-ms" -> a.stableAfterMs = number(argv[i], value);
                default -> throw new IllegalArgumentException("unknown argument " + argv[i]);
            }
        }
        if (!portGiven || a.seeds.isEmpty()) {
            throw new IllegalArgumentException("--port and --seeds are required");
        }
        if (a.bindPort < 0) {
            a.bindPort = a.port;
        }
        return a;
    }

    private static int number(String flag, String value) {
        try {
            int n = Integer.parseInt(value);
            if (n < 0) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + " needs a non-negative integer, not " + value);
        }
    }
}
