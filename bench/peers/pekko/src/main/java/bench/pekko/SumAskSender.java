package bench.pekko;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.pattern.Patterns;

/**
 * "ask sum"'s sender: {@code Patterns.ask} of pairs {@code (i, i + 1)} for i
 * in 0..n to the remote {@code ask-sum}, as the seed's Akka client does,
 * with at most {@code window} unanswered. Each answer (or failure) comes
 * back to this actor as an {@link Answer}, is checked against
 * {@code 2i + 1} and frees a place for the next ask. After the last answer
 * it asks the receiver's {@link SumTally} and completes {@code done}.
 */
final class SumAskSender extends AbstractActor {
    record Start(long n, long window, CompletableFuture<SumSides> done) {}

    /** One ask's outcome, delivered locally (never serialized). */
    record Answer(int a, Object reply, Throwable failure) {}

    /**
     * Runs an ask's callback on the thread that completes it. With fewer
     * than 3 cores the JDK's default async executor starts a thread per
     * task, and the stage Pekko's ask returns runs even its non-async
     * callbacks through it: that alone capped this test near 2,500 asks/s.
     */
    private static final Executor ON_COMPLETING_THREAD = Runnable::run;

    /** A lost request or answer fails its ask after this, counted as wrong. */
    static final Duration ASK_TIMEOUT = Duration.ofSeconds(60);

    private final ActorRef receiver;
    private long n;
    private long window;
    private CompletableFuture<SumSides> done;
    private long sent;
    private long received;
    private long right;
    private long wrong;
    private long answerSum;
    private long maxInFlight;

    SumAskSender(ActorRef receiver) {
        this.receiver = receiver;
    }

    @Override
    public Receive createReceive() {
        return receiveBuilder()
                .match(Start.class, this::start)
                .match(Answer.class, this::answered)
                .match(SumTally.class, t -> done.complete(new SumSides(right, wrong, answerSum, maxInFlight, t)))
                .build();
    }

    private void start(Start s) {
        n = s.n();
        window = s.window();
        done = s.done();
        askMore();
    }

    private void answered(Answer answer) {
        received++;
        boolean ok = answer.failure() == null
                && answer.reply() instanceof Integer r && r == 2 * answer.a() + 1;
        if (ok) {
            right++;
            answerSum += (Integer) answer.reply();
        } else {
            wrong++;
        }
        askMore();
        if (received == n) {
            receiver.tell(TakeTally.INSTANCE, getSelf());
        }
    }

    private void askMore() {
        ActorRef self = getSelf();
        long until = Math.min(n, received + window);
        for (; sent < until; sent++) {
            int a = (int) sent;
            Patterns.ask(receiver, new SumPair(a, a + 1), ASK_TIMEOUT)
                    .whenCompleteAsync((reply, failure) -> self.tell(new Answer(a, reply, failure), ActorRef.noSender()),
                            ON_COMPLETING_THREAD);
        }
        maxInFlight = Math.max(maxInFlight, sent - received);
    }
}
