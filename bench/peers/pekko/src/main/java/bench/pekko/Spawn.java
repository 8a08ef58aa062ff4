package bench.pekko;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;

/**
 * spawn: N idle top-level actors (children of /user) created with
 * {@code system.actorOf}; "started" is {@code preStart}, "stopped" is
 * {@code postStop}, both observed through latches.
 */
final class Spawn {
    private Spawn() {}

    static final class Idle extends AbstractActor {
        private final CountDownLatch started;
        private final CountDownLatch stopped;

        Idle(CountDownLatch started, CountDownLatch stopped) {
            this.started = started;
            this.stopped = stopped;
        }

        @Override
        public void preStart() {
            started.countDown();
        }

        @Override
        public void postStop() {
            stopped.countDown();
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder().matchAny(m -> {}).build();
        }
    }

    /** Spawn/stop rounds run first so the measured round uses JIT-compiled code. */
    private static final int WARMUP_ROUNDS = 3;
    private static final int WARMUP_ACTORS = 20_000;

    static void run(Args args) throws Exception {
        int n = (int) Math.min(args.actors, Integer.MAX_VALUE);
        ActorSystem system = ActorSystem.create("spawn", Settings.local(Args.DEFAULT_THROUGHPUT));
        try {
            for (int r = 0; r < WARMUP_ROUNDS; r++) {
                round(system, Math.min(n, WARMUP_ACTORS), false);
            }
            round(system, n, true);
        } finally {
            Util.terminate(system);
        }
    }

    private static void round(ActorSystem system, int n, boolean report) throws Exception {
        CountDownLatch started = new CountDownLatch(n);
        CountDownLatch stopped = new CountDownLatch(n);
        Props props = Props.create(Idle.class, () -> new Idle(started, stopped));
        ActorRef[] alive = new ActorRef[n];

        long heapBefore = usedHeap(); // also a full GC, so RSS starts settled
        long rssBefore = Util.rssBytes();
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            alive[i] = system.actorOf(props);
        }
        await(started, "start");
        long spawnNs = System.nanoTime() - start;
        long rssGrowth = Util.rssBytes() - rssBefore;
        if (report) {
            // RSS of a JVM also counts heap pages touched by garbage (and
            // misses pages the warmup already touched); live heap after a full
            // GC is a second opinion, on stderr only. Outside both timings.
            System.err.printf("pekko: live heap per actor ~%.1f bytes%n",
                    (double) (usedHeap() - heapBefore) / n);
        }

        start = System.nanoTime();
        for (ActorRef a : alive) {
            system.stop(a);
        }
        await(stopped, "stop");
        long stopNs = System.nanoTime() - start;
        if (report) {
            Json.object()
                    .str("scenario", "spawn")
                    .str("system", "pekko")
                    .num("actors", n)
                    .num("spawn_ns_per_actor", (double) spawnNs / n)
                    .num("stop_ns_per_actor", (double) stopNs / n)
                    .num("bytes_per_actor", (double) rssGrowth / n)
                    .emit();
        }
    }

    private static void await(CountDownLatch latch, String what) throws Exception {
        if (!latch.await(Util.TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
            throw new BenchFailure("timed out waiting for " + what + "; " + latch.getCount() + " actors left");
        }
    }

    private static long usedHeap() {
        System.gc();
        Runtime rt = Runtime.getRuntime();
        return rt.totalMemory() - rt.freeMemory();
    }
}
