package bench.kontraktor;

import org.nustaq.kontraktor.Actor;
import org.nustaq.kontraktor.Actors;
import org.nustaq.kontraktor.IPromise;
import org.nustaq.kontraktor.Promise;

/**
 * The sending side (remoting-benchmarks' KClient.ClientActor): one actor
 * sends {@code n} pairs (i, i + 1) in a loop and, as the seed does, backs
 * off with {@code Actors.yield()} while the remote ref's queue is more than
 * half full. {@code Actors.yield()} also runs the callbacks that arrived,
 * so the answers of the ask test are taken while sending. The seed ignores
 * the answers; here each one is checked and summed.
 */
public class SumClient extends Actor<SumClient> {

    SumServer server;
    long received;
    long wrong;
    long answerSum;
    long maxInFlight;
    Promise<long[]> allAnswered;

    public void init(SumServer server) {
        this.server = server;
    }

    /** Tells {@code n} pairs; resolves with the server's counts, asked after them. */
    public IPromise<long[]> tellSum(int n) {
        for (int i = 0; i < n; i++) {
            while (server.isMailboxPressured()) {
                Actors.yield();
            }
            server.sum(i, i + 1);
        }
        return server.takeCounts();
    }

    /**
     * Asks {@code n} pairs; resolves with {received, wrong, sum of the
     * answers, most answers outstanding at once} when the last answer is in.
     */
    public IPromise<long[]> askSum(int n) {
        received = 0;
        wrong = 0;
        answerSum = 0;
        maxInFlight = 0;
        allAnswered = new Promise<>();
        for (int i = 0; i < n; i++) {
            while (server.isMailboxPressured()) {
                Actors.yield();
            }
            final int a = i;
            server.askSum(a, a + 1).then((r, err) -> answered(a, r, err, n));
            maxInFlight = Math.max(maxInFlight, i + 1 - received);
        }
        return allAnswered;
    }

    /** The server's counts since the last time they were taken. */
    public IPromise<long[]> serverCounts() {
        return server.takeCounts();
    }

    private void answered(int a, Integer r, Object err, int n) {
        if (err != null || r == null || r != 2 * a + 1) {
            wrong++;
        } else {
            answerSum += r;
        }
        received++;
        if (received == n) {
            allAnswered.resolve(new long[] {received, wrong, answerSum, maxInFlight});
        }
    }
}
