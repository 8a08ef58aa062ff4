package bench.pekko;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;
import org.apache.pekko.pattern.Patterns;

/**
 * ask-local: the driver thread asks one responder N times with the idiomatic
 * {@code Patterns.ask} (a temporary PromiseActorRef per request) and blocks on
 * each reply, so exactly one request is in flight.
 */
final class AskLocal {
    private AskLocal() {}

    static final class Responder extends AbstractActor {
        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(Long.class, n -> getSender().tell(n + 1, getSelf()))
                    .build();
        }
    }

    static void run(Args args) throws Exception {
        int n = (int) Math.min(args.requests, Integer.MAX_VALUE);
        int warmup = n / 10;
        ActorSystem system = ActorSystem.create("ask-local", Settings.local(Args.DEFAULT_THROUGHPUT));
        try {
            ActorRef responder = system.actorOf(Props.create(Responder.class, Responder::new));
            Duration timeout = Duration.ofSeconds(30);
            long[] rtt = new long[n];
            for (long i = 0; i < warmup + n; i++) {
                long t = System.nanoTime();
                Object answer = Patterns.ask(responder, i, timeout)
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                long took = System.nanoTime() - t;
                if (i >= warmup) {
                    rtt[(int) (i - warmup)] = took;
                }
                if (!(answer instanceof Long a) || a != i + 1) {
                    throw new BenchFailure("wrong reply " + answer + " to request " + i);
                }
            }
            // Exact percentiles from the sorted samples (the Rust harness uses
            // an HdrHistogram with 3 significant digits; the difference is <0.1%).
            Arrays.sort(rtt);
            double mean = Arrays.stream(rtt).average().orElse(0);
            Json.object()
                    .str("scenario", "ask-local")
                    .str("system", "pekko")
                    .num("requests", n)
                    .num("p50_ns", percentile(rtt, 0.50))
                    .num("p99_ns", percentile(rtt, 0.99))
                    .num("mean_ns", mean)
                    .emit();
        } finally {
            Util.terminate(system);
        }
    }

    /** Nearest-rank percentile of sorted samples (HdrHistogram's definition). */
    private static long percentile(long[] sorted, double q) {
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }
}
