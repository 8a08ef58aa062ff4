package bench.pekko;

import java.util.ArrayList;
import java.util.List;

/** Command-line contract shared with the Rust harness (see bench/peers/README.md). */
final class Args {
    static final String USAGE = String.join("\n",
            "usage:",
            "  java -jar pekko-bench.jar local-pingpong [--system pekko] --configs P:K:T[,P:K:T...] --messages M [--warmup]",
            "  java -jar pekko-bench.jar spawn [--system pekko] --actors N",
            "  java -jar pekko-bench.jar ask-local [--system pekko] --requests N",
            "  java -jar pekko-bench.jar remote-pingpong [--system pekko] --clients 1,5,10 --repeat R [--inflight 50]",
            "  java -jar pekko-bench.jar failover [--system pekko] [--cases kill,stall-short,stall-long,restart,large-messages]",
            "      [--watched 10] [--heartbeat-ms 200] [--pause-ms 1000] [--threshold 10] [--settle-ms 2000]",
            "      [--stall-short-ms 700] [--window-ms 3000] [--detect-timeout-ms 15000] [--large-ms 10000]",
            "  java -jar pekko-bench.jar failover-node [--port P] [--watched 10] [--heartbeat-ms 200] [--pause-ms 1000] [--threshold 10]",
            "  java -jar pekko-bench.jar sum-server [--system pekko] [--ack-every 1000]",
            "  java -jar pekko-bench.jar sum-client [--system pekko] --server ADDRESS --test tell|ask --messages N",
            "      [--runs 3] [--warmup-messages N] [--window 20000] [--ack-every 1000]");

    /** The failover cases, in run order. */
    static final List<String> FAILOVER_CASES =
            List.of("kill", "stall-short", "stall-long", "restart", "large-messages");

    /** Pekko's own default for dispatcher throughput, used when T is omitted. */
    static final int DEFAULT_THROUGHPUT = 5;

    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    record PairConfig(long pairs, long inflight, int throughput) {}

    String scenario;
    List<PairConfig> configs;
    long messages;
    boolean warmup;
    long actors;
    long requests;
    int[] clients;
    long repeat;
    int inflight = 50;
    // failover and failover-node: the same defaults as `volley-bench failover`.
    List<String> cases = FAILOVER_CASES;
    int watched = 10;
    long heartbeatMs = 200;
    long pauseMs = 1000;
    double threshold = 10.0;
    long settleMs = 2000;
    long stallShortMs = 700;
    long windowMs = 3000;
    long detectTimeoutMs = 15_000;
    long largeMs = 10_000;
    int port;
    // sum-server and sum-client (the kontraktor scenario's Pekko row).
    String server;
    String test;
    long runs = 3;
    long warmupMessages;
    long window = 20_000;
    long ackEvery = 1_000;

    static Args parse(String[] argv) throws UsageException {
        if (argv.length == 0) {
            throw new UsageException("missing scenario");
        }
        Args a = new Args();
        a.scenario = argv[0];
        List<String> allowed = switch (a.scenario) {
            case "local-pingpong" -> List.of("--system", "--configs", "--messages", "--warmup");
            case "spawn" -> List.of("--system", "--actors");
            case "ask-local" -> List.of("--system", "--requests");
            case "remote-pingpong" -> List.of("--system", "--clients", "--repeat", "--inflight");
            case "failover" -> List.of("--system", "--cases", "--watched", "--heartbeat-ms", "--pause-ms",
                    "--threshold", "--settle-ms", "--stall-short-ms", "--window-ms", "--detect-timeout-ms",
                    "--large-ms");
            case "failover-node" -> List.of("--system", "--port", "--watched", "--heartbeat-ms", "--pause-ms",
                    "--threshold");
            case "sum-server" -> List.of("--system", "--ack-every");
            case "sum-client" -> List.of("--system", "--server", "--test", "--messages", "--runs",
                    "--warmup-messages", "--window", "--ack-every");
            default -> throw new UsageException("unknown scenario '" + a.scenario + "'");
        };
        List<String> seen = new ArrayList<>();
        for (int i = 1; i < argv.length; i++) {
            String flag = argv[i];
            if (!allowed.contains(flag)) {
                throw new UsageException("flag '" + flag + "' is not valid for " + a.scenario);
            }
            seen.add(flag);
            if (flag.equals("--warmup")) {
                a.warmup = true;
                continue;
            }
            if (++i >= argv.length) {
                throw new UsageException(flag + " needs a value");
            }
            String v = argv[i];
            switch (flag) {
                case "--system" -> {
                    if (!v.equals("pekko")) {
                        throw new UsageException("this harness only runs --system pekko, got '" + v + "'");
                    }
                }
                case "--configs" -> a.configs = parseConfigs(v);
                case "--messages" -> a.messages = positive(flag, v);
                case "--actors" -> a.actors = positive(flag, v);
                case "--requests" -> a.requests = positive(flag, v);
                case "--clients" -> a.clients = parseClients(v);
                case "--repeat" -> a.repeat = positive(flag, v);
                case "--inflight" -> a.inflight = (int) Math.min(positive(flag, v), Integer.MAX_VALUE);
                case "--cases" -> a.cases = parseCases(v);
                case "--watched" -> a.watched = (int) Math.min(positive(flag, v), 10_000);
                case "--heartbeat-ms" -> a.heartbeatMs = positive(flag, v);
                case "--pause-ms" -> a.pauseMs = positive(flag, v);
                case "--threshold" -> a.threshold = positiveDouble(flag, v);
                case "--settle-ms" -> a.settleMs = positive(flag, v);
                case "--stall-short-ms" -> a.stallShortMs = positive(flag, v);
                case "--window-ms" -> a.windowMs = positive(flag, v);
                case "--detect-timeout-ms" -> a.detectTimeoutMs = positive(flag, v);
                case "--large-ms" -> a.largeMs = positive(flag, v);
                case "--port" -> a.port = (int) Math.min(positiveOrZero(flag, v), 65_535);
                case "--server" -> a.server = v;
                case "--test" -> a.test = sumTest(v);
                case "--runs" -> a.runs = positive(flag, v);
                case "--warmup-messages" -> a.warmupMessages = positiveOrZero(flag, v);
                case "--window" -> a.window = positive(flag, v);
                case "--ack-every" -> a.ackEvery = positive(flag, v);
                default -> throw new IllegalStateException(flag);
            }
        }
        for (String flag : allowed) {
            // Every failover flag has a default.
            boolean optional = flag.equals("--system") || flag.equals("--warmup") || flag.equals("--inflight")
                    || a.scenario.startsWith("failover") || SUM_DEFAULTED.contains(flag);
            if (!optional && !seen.contains(flag)) {
                throw new UsageException(flag + " is required for " + a.scenario);
            }
        }
        return a;
    }

    /** The sum scenarios' flags that have a default. */
    private static final List<String> SUM_DEFAULTED =
            List.of("--ack-every", "--runs", "--warmup-messages", "--window");

    private static String sumTest(String v) throws UsageException {
        if (!v.equals("tell") && !v.equals("ask")) {
            throw new UsageException("--test is tell or ask, not '" + v + "'");
        }
        return v;
    }

    private static long positive(String flag, String v) throws UsageException {
        try {
            long n = Long.parseLong(v);
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException ignored) {
            // fall through to the error below
        }
        throw new UsageException(flag + " expects a positive integer, got '" + v + "'");
    }

    private static long positiveOrZero(String flag, String v) throws UsageException {
        return v.equals("0") ? 0 : positive(flag, v);
    }

    private static double positiveDouble(String flag, String v) throws UsageException {
        try {
            double d = Double.parseDouble(v);
            if (d > 0 && Double.isFinite(d)) {
                return d;
            }
        } catch (NumberFormatException ignored) {
            // fall through to the error below
        }
        throw new UsageException(flag + " expects a positive number, got '" + v + "'");
    }

    private static List<String> parseCases(String v) throws UsageException {
        List<String> out = new ArrayList<>();
        for (String c : v.split(",", -1)) {
            if (!FAILOVER_CASES.contains(c)) {
                throw new UsageException("--cases: unknown case '" + c + "' (expected some of "
                        + String.join(",", FAILOVER_CASES) + ")");
            }
            out.add(c);
        }
        return out;
    }

    private static List<PairConfig> parseConfigs(String v) throws UsageException {
        List<PairConfig> out = new ArrayList<>();
        for (String item : v.split(",", -1)) {
            String[] p = item.split(":", -1);
            if (p.length < 2 || p.length > 3) {
                throw new UsageException("--configs entry '" + item + "' is not P:K:T");
            }
            long t = p.length == 3 ? positive("--configs throughput", p[2]) : DEFAULT_THROUGHPUT;
            out.add(new PairConfig(
                    positive("--configs pairs", p[0]),
                    positive("--configs inflight", p[1]),
                    (int) Math.min(t, Integer.MAX_VALUE)));
        }
        return out;
    }

    private static int[] parseClients(String v) throws UsageException {
        String[] parts = v.split(",", -1);
        int[] out = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = (int) Math.min(positive("--clients", parts[i]), 100_000);
        }
        return out;
    }
}
