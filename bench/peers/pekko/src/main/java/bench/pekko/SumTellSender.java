package bench.pekko;

import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;

/**
 * "tell sum"'s sender: tells pairs {@code (i, i + 1)} for i in 0..n to the
 * remote {@code tell-sum}, never more than {@code window} beyond the count
 * the receiver last acknowledged (it acks every {@code ack-every} pairs).
 * After the last pair it sends {@link TakeTally} on the same stream and
 * completes {@code done} with what it sent and the receiver's answer.
 */
final class SumTellSender extends AbstractActor {
    record Start(long n, long window, CompletableFuture<SumSides> done) {}

    private final ActorRef receiver;
    private long n;
    private long window;
    private CompletableFuture<SumSides> done;
    private long sent;
    private long sentSum;
    private long acked;

    SumTellSender(ActorRef receiver) {
        this.receiver = receiver;
    }

    @Override
    public Receive createReceive() {
        return receiveBuilder()
                .match(Start.class, this::start)
                .match(Long.class, this::acked)
                .match(SumTally.class, t -> done.complete(new SumSides(sent, 0, sentSum, -1, t)))
                .build();
    }

    private void start(Start s) {
        n = s.n();
        window = s.window();
        done = s.done();
        sendMore();
    }

    private void acked(Long count) {
        acked = Math.max(acked, count);
        sendMore();
    }

    private void sendMore() {
        if (sent == n) {
            return;
        }
        long until = Math.min(n, acked + window);
        for (; sent < until; sent++) {
            int a = (int) sent;
            receiver.tell(new SumPair(a, a + 1), getSelf());
            sentSum += 2L * a + 1;
        }
        if (sent == n) {
            receiver.tell(TakeTally.INSTANCE, getSelf());
        }
    }
}
