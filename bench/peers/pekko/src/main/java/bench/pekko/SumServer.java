package bench.pekko;

import java.io.IOException;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Props;

/**
 * The receiving JVM of the seed's "tell sum" / "ask sum" (remoting-benchmarks'
 * akka Server and CalculatorActor) on Artery TCP: an ActorSystem
 * {@value #SYSTEM} on 127.0.0.1 (an ephemeral port) with two receivers,
 * {@code /user/tell-sum} and {@code /user/ask-sum}. It prints
 * {@code {"event":"listening","address":"pekko://sum-b@127.0.0.1:P"}} on
 * stdout once it listens and serves until its stdin closes.
 */
final class SumServer {
    private SumServer() {}

    static final String SYSTEM = "sum-b";
    static final String TELL = "tell-sum";
    static final String ASK = "ask-sum";

    /**
     * Keeps the count and running sum of its pairs and answers
     * {@link TakeTally} with them (then starts again from zero).
     */
    abstract static class Receiver extends AbstractActor {
        long count;
        long sum;

        void add(SumPair p) {
            count++;
            sum += (long) p.a() + p.b();
        }

        void answerTally() {
            getSender().tell(new SumTally(count, sum), getSelf());
            count = 0;
            sum = 0;
        }
    }

    /**
     * "tell sum": no answer per pair, but every {@code ackEvery} pairs the
     * count so far goes back to the sender as a {@code Long}: the credit
     * that lets the sender go on (Artery drops what overflows its outbound
     * queue, so the sender must not run ahead unboundedly).
     */
    static final class TellSum extends Receiver {
        private final long ackEvery;

        TellSum(long ackEvery) {
            this.ackEvery = ackEvery;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(SumPair.class, p -> {
                        add(p);
                        if (count % ackEvery == 0) {
                            getSender().tell(count, getSelf());
                        }
                    })
                    .match(TakeTally.class, t -> answerTally())
                    .build();
        }
    }

    /** "ask sum": each pair answered with {@code a + b} (an {@code Integer}). */
    static final class AskSum extends Receiver {
        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(SumPair.class, p -> {
                        add(p);
                        getSender().tell(p.a() + p.b(), getSelf());
                    })
                    .match(TakeTally.class, t -> answerTally())
                    .build();
        }
    }

    static void run(Args args) throws IOException {
        ActorSystem system = ActorSystem.create(SYSTEM, Settings.sum());
        long ackEvery = args.ackEvery;
        system.actorOf(Props.create(TellSum.class, () -> new TellSum(ackEvery)), TELL);
        system.actorOf(Props.create(AskSum.class, AskSum::new), ASK);
        Address address = ((ExtendedActorSystem) system).provider().getDefaultAddress();
        Json.line("{\"event\":\"listening\",\"address\":\"" + address + "\"}");
        while (System.in.read() >= 0) {
            // serve until the driver closes stdin
        }
        system.terminate();
    }
}
