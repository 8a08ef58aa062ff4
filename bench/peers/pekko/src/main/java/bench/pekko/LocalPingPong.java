package bench.pekko;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;

/**
 * local-pingpong: P pairs bounce a tiny message; each ping keeps K in flight.
 * Same protocol as the Rust harness (bench/peers/rust/src/plan.rs): each ping
 * sends M/P/2 balls, pong echoes each back, so a pair receives M/P messages.
 */
final class LocalPingPong {
    private LocalPingPong() {}

    /** Sent by the driver once every pair exists; carries the peer. */
    record Start(ActorRef pong) {}

    record Ball(long n) {}

    /** Ask for an actor's received count; also proves the actor is running. */
    enum GetCount { INSTANCE }

    static final class Ping extends AbstractActor {
        private final long target;
        private final long prime;
        private final CountDownLatch done;
        private final LongAdder receivedTotal;
        private ActorRef pong;
        private long sent;
        private long received;

        Ping(long target, long prime, CountDownLatch done, LongAdder receivedTotal) {
            this.target = target;
            this.prime = prime;
            this.done = done;
            this.receivedTotal = receivedTotal;
        }

        static Props props(long target, long inflight, CountDownLatch done, LongAdder receivedTotal) {
            long prime = Math.min(inflight, target);
            return Props.create(Ping.class, () -> new Ping(target, prime, done, receivedTotal));
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(Ball.class, this::onBall)
                    .match(Start.class, this::onStart)
                    .matchEquals(GetCount.INSTANCE, g -> getSender().tell(received, getSelf()))
                    .build();
        }

        private void onStart(Start s) {
            pong = s.pong();
            for (long n = 0; n < prime; n++) {
                pong.tell(new Ball(n), getSelf());
            }
            sent = prime;
        }

        private void onBall(Ball b) {
            received++;
            if (sent < target) {
                sent++;
                pong.tell(new Ball(b.n() + 1), getSelf());
            } else if (received == target) {
                receivedTotal.add(received);
                done.countDown();
            }
        }
    }

    static final class Pong extends AbstractActor {
        private long count;

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(Ball.class, b -> {
                        count++;
                        getSender().tell(b, getSelf());
                    })
                    .matchEquals(GetCount.INSTANCE, g -> getSender().tell(count, getSelf()))
                    .build();
        }
    }

    static void run(Args args) throws Exception {
        // Validate every config before spending time on any of them.
        for (Args.PairConfig c : args.configs) {
            if (args.messages / c.pairs() / 2 == 0) {
                System.err.println("pekko-bench: --messages " + args.messages + " is too small for "
                        + c.pairs() + " pairs");
                System.exit(2);
            }
        }
        for (Args.PairConfig c : args.configs) {
            // Throughput is a dispatcher setting, so each config gets its own system.
            ActorSystem system = ActorSystem.create("local-pingpong", Settings.local(c.throughput()));
            try {
                long warm = args.messages / 10 / c.pairs() / 2;
                if (args.warmup && warm > 0) {
                    System.err.println("pekko: warmup " + c + " sends/pair=" + warm);
                    round(system, c, warm);
                }
                long sends = args.messages / c.pairs() / 2;
                System.err.println("pekko: measuring " + c + " sends/pair=" + sends);
                long elapsed = round(system, c, sends);
                long total = 2 * sends * c.pairs();
                Json.object()
                        .str("scenario", "local-pingpong")
                        .str("system", "pekko")
                        .num("pairs", c.pairs())
                        .num("inflight", c.inflight())
                        .num("throughput", c.throughput())
                        .num("messages", total)
                        .num("elapsed_ns", elapsed)
                        .num("msgs_per_sec", total * 1e9 / elapsed)
                        .emit();
            } finally {
                Util.terminate(system);
            }
        }
    }

    /** Runs one round, verifies every message was counted, returns elapsed ns. */
    private static long round(ActorSystem system, Args.PairConfig c, long sendsPerPair) throws Exception {
        int pairs = (int) c.pairs();
        CountDownLatch done = new CountDownLatch(pairs);
        LongAdder pingReceived = new LongAdder();
        ActorRef[] pings = new ActorRef[pairs];
        ActorRef[] pongs = new ActorRef[pairs];
        for (int i = 0; i < pairs; i++) {
            pings[i] = system.actorOf(Ping.props(sendsPerPair, c.inflight(), done, pingReceived));
            pongs[i] = system.actorOf(Props.create(Pong.class, Pong::new));
        }
        // actorOf returns before the actor runs; a round trip to each one
        // guarantees all exist before the clock starts.
        for (int i = 0; i < pairs; i++) {
            Util.ask(pings[i], GetCount.INSTANCE);
            Util.ask(pongs[i], GetCount.INSTANCE);
        }

        long start = System.nanoTime();
        for (int i = 0; i < pairs; i++) {
            pings[i].tell(new Start(pongs[i]), ActorRef.noSender());
        }
        if (!done.await(Util.TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
            throw new BenchFailure("timed out; " + done.getCount() + " of " + pairs + " pairs unfinished");
        }
        long elapsed = System.nanoTime() - start;

        long received = pingReceived.sum();
        for (int i = 0; i < pairs; i++) {
            long pongCount = Util.<Long>ask(pongs[i], GetCount.INSTANCE);
            received += pongCount;
            system.stop(pings[i]);
            system.stop(pongs[i]);
        }
        long expected = 2 * sendsPerPair * pairs;
        if (received != expected) {
            throw new BenchFailure("actors counted " + received + " received messages, expected " + expected);
        }
        return Math.max(elapsed, 1);
    }
}
