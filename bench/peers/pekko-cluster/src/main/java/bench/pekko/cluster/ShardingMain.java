package bench.pekko.cluster;

import java.io.PrintStream;

/** {@code sharding-node}'s entry (see {@link ShardingNode}); exit codes as {@link Main}'s. */
final class ShardingMain {
    private ShardingMain() {}

    static void run(String[] argv, PrintStream events) {
        ShardingArgs args;
        try {
            args = ShardingArgs.parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("pekko-cluster-bench: " + e.getMessage());
            System.err.println(ShardingArgs.USAGE);
            System.exit(2);
            return;
        }
        try {
            ShardingNode.run(args, new EventLine.Sink(events));
        } catch (Exception e) {
            System.err.println("pekko-cluster-bench: error: " + e);
            e.printStackTrace(System.err);
            System.exit(1);
        }
    }
}
