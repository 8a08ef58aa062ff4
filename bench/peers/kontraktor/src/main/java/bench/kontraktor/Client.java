package bench.kontraktor;

import java.util.Map;

import org.nustaq.kontraktor.Actors;

/** The client JVM: warm-up, then R measured runs of one test. */
final class Client {

    /** The seed's client actor queue (KClient: AsActor(.., 256000)). */
    static final int CLIENT_QUEUE = 256_000;
    static final long TIMEOUT_MS = 300_000;

    static void run(int port, Map<String, String> args) {
        String test = Main.required(args, "test");
        if (!test.equals("tell") && !test.equals("ask")) {
            throw new IllegalArgumentException("--test is tell or ask, not " + test);
        }
        int n = Integer.parseInt(Main.required(args, "messages"));
        int runs = Integer.parseInt(args.getOrDefault("runs", "3"));
        int warmup = Integer.parseInt(args.getOrDefault("warmup", String.valueOf(n)));
        if (n <= 0 || runs <= 0 || warmup < 0) {
            throw new IllegalArgumentException("--messages and --runs must be positive");
        }
        SumServer server = Main.connect(port);
        SumClient client = Actors.AsActor(SumClient.class, CLIENT_QUEUE);
        client.init(server);
        if (warmup > 0) {
            System.err.println("kontraktor-bench: warm-up, " + warmup + " " + test);
            Outcome w = once(client, test, warmup);
            if (!w.verified()) {
                throw new IllegalStateException("warm-up not verified: " + w.json());
            }
        }
        boolean ok = true;
        for (int r = 0; r < runs; r++) {
            Outcome o = once(client, test, n);
            System.out.println(o.json());
            System.out.flush();
            ok &= o.verified();
        }
        client.stop();
        if (!ok) {
            throw new IllegalStateException("a run was not verified (see its line)");
        }
    }

    static Outcome once(SumClient client, String test, int n) {
        long start = System.nanoTime();
        if (test.equals("tell")) {
            long[] server = client.tellSum(n).await(TIMEOUT_MS);
            long elapsed = System.nanoTime() - start;
            return new Outcome("tell", n, elapsed, -1, n, 0, expectedSum(n), server[0], server[1]);
        }
        long[] got = client.askSum(n).await(TIMEOUT_MS);
        long elapsed = System.nanoTime() - start;
        long[] server = client.serverCounts().await(TIMEOUT_MS);
        return new Outcome("ask", n, elapsed, got[3], got[0], got[1], got[2], server[0], server[1]);
    }

    /** The sum of (i + i + 1) for i in 0..n. */
    static long expectedSum(long n) {
        return n * n;
    }
}
