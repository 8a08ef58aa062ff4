package bench.kontraktor;

import org.nustaq.kontraktor.Actor;
import org.nustaq.kontraktor.IPromise;
import org.nustaq.kontraktor.Promise;

/**
 * The receiving side of the seed's test (remoting-benchmarks' KServer):
 * {@code sum} is the "tell sum" (no reply), {@code askSum} the "ask sum"
 * (answered with a + b). Unlike the seed's server, which only counts, it
 * keeps the count and the running sum of what it got, so the client can
 * check that every message arrived.
 */
public class SumServer extends Actor<SumServer> {

    long count;
    long sum;

    public void sum(int a, int b) {
        count++;
        sum += (long) a + b;
    }

    public IPromise<Integer> askSum(int a, int b) {
        count++;
        sum += (long) a + b;
        return new Promise<>(a + b);
    }

    /**
     * Count and sum since the last call, then reset. Calls on one
     * connection are processed in order, so the answer covers every
     * message sent before it.
     */
    public IPromise<long[]> takeCounts() {
        long[] counts = {count, sum};
        count = 0;
        sum = 0;
        return new Promise<>(counts);
    }
}
