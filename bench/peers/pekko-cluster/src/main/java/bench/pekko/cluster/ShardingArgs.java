package bench.pekko.cluster;

import java.util.ArrayList;
import java.util.List;

/**
 * The command line of {@code sharding-node}: the sharding settings, then
 * {@code cluster-node}'s own ({@link NodeArgs}).
 */
final class ShardingArgs {
    static final String USAGE = String.join("\n",
            "usage: java -jar pekko-cluster-bench.jar sharding-node [--shards 100]",
            "           [--rebalance-ms 2000] [--absolute-limit 20] [--relative-limit 0.1]",
            "           <the arguments of cluster-node>",
            "stdin, one command per line: run ROW TOTAL WINDOW ACK_EVERY ENTITIES PREFIX ask|tell",
            "           | stop-load | reset | check EXPECTED ids|- | shards | ping-singleton | leave | exit",
            "stdout: one JSON object per line (see bench/peers/README.md, \"sharding\")");

    NodeArgs node;
    int shards = 100;
    int rebalanceMs = 2000;
    int absoluteLimit = 20;
    double relativeLimit = 0.1;

    private ShardingArgs() {}

    static ShardingArgs parse(String[] argv) {
        if (argv.length == 0 || !argv[0].equals("sharding-node")) {
            throw new IllegalArgumentException("expected sharding-node");
        }
        ShardingArgs a = new ShardingArgs();
        List<String> rest = new ArrayList<>(List.of("cluster-node"));
        for (int i = 1; i < argv.length; i++) {
            String flag = argv[i];
            boolean own = List.of("--shards", "--rebalance-ms", "--absolute-limit", "--relative-limit")
                    .contains(flag);
            if (!own) {
                rest.add(flag);
                continue;
            }
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException(flag + " needs a value");
            }
            String value = argv[++i];
            try {
                switch (flag) {
                    case "--shards" -> a.shards = Integer.parseInt(value);
                    case "--rebalance-ms" -> a.rebalanceMs = Integer.parseInt(value);
                    case "--absolute-limit" -> a.absoluteLimit = Integer.parseInt(value);
                    default -> a.relativeLimit = Double.parseDouble(value);
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(flag + " needs a number, not " + value);
            }
        }
        a.node = NodeArgs.parse(rest.toArray(new String[0]));
        return a;
    }
}
