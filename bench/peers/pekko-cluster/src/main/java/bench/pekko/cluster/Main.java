package bench.pekko.cluster;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Entry point of the Pekko Cluster peer: {@code cluster-node}, one cluster
 * member per JVM, driven by {@code volley-bench cluster} over stdin and
 * stdout (see {@link ClusterNode}). Exit codes: 0 ok, 1 the node failed, 2 bad
 * arguments.
 */
public final class Main {
    private Main() {}

    public static void main(String[] argv) {
        // Claim the real stdout for event lines before anything (Pekko's
        // StdOutLogger, Scala's Console) can grab it; everything else that
        // writes to System.out lands on stderr.
        PrintStream events = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);

        if (argv.length > 0 && argv[0].equals("sharding-node")) {
            ShardingMain.run(argv, events);
            return;
        }
        NodeArgs args;
        try {
            args = NodeArgs.parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("pekko-cluster-bench: " + e.getMessage());
            System.err.println(NodeArgs.USAGE);
            System.exit(2);
            return;
        }
        try {
            ClusterNode.run(args, new EventLine.Sink(events));
        } catch (Exception e) {
            System.err.println("pekko-cluster-bench: error: " + e);
            e.printStackTrace(System.err);
            System.exit(1);
        }
    }
}
