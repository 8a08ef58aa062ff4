package bench.pekko;

/**
 * Entry point of the Pekko peer harness. Runs one scenario and prints one JSON
 * line per result on stdout; everything else goes to stderr. Exit codes: 0 ok,
 * 1 run failed (e.g. message counts did not add up), 2 bad arguments.
 */
public final class Main {
    private Main() {}

    public static void main(String[] argv) {
        // Claim the real stdout for JSON before anything (Pekko's StdOutLogger,
        // Scala's Console) can grab it, then point System.out at stderr.
        Json.init();
        System.setOut(System.err);

        Args args;
        try {
            args = Args.parse(argv);
        } catch (Args.UsageException e) {
            System.err.println("pekko-bench: " + e.getMessage());
            System.err.println(Args.USAGE);
            System.exit(2);
            return;
        }

        int code = 0;
        try {
            switch (args.scenario) {
                case "local-pingpong" -> LocalPingPong.run(args);
                case "spawn" -> Spawn.run(args);
                case "ask-local" -> AskLocal.run(args);
                case "remote-pingpong" -> RemotePingPong.run(args);
                case "failover" -> Failover.run(args);
                case "failover-node" -> FailoverNode.run(args);
                case "sum-server" -> SumServer.run(args);
                case "sum-client" -> SumClient.run(args);
                default -> throw new IllegalStateException("unreachable: " + args.scenario);
            }
        } catch (BenchFailure e) {
            System.err.println("pekko-bench: error: " + e.getMessage());
            code = 1;
        } catch (Exception e) {
            System.err.println("pekko-bench: error: " + e);
            e.printStackTrace(System.err);
            code = 1;
        }
        // Leftover non-daemon threads must not keep the driver waiting.
        System.exit(code);
    }
}
