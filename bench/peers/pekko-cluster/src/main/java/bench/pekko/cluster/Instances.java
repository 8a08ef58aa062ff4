package bench.pekko.cluster;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * This JVM's book of entity instances: which ids are alive here and what
 * each live instance has counted since the last {@link #reset}, so the
 * driver can check every total and find an id alive on two nodes at once.
 */
final class Instances {
    /** The live instances: id to the messages it counted since the last reset. */
    private final Map<String, AtomicLong> live = new ConcurrentHashMap<>();
    private final AtomicLong started = new AtomicLong();
    private final AtomicLong stopped = new AtomicLong();
    /** A start for an id already alive in this JVM (must stay 0). */
    private final AtomicLong localDuplicates = new AtomicLong();
    /** Messages counted by any instance since the last reset, stopped ones included. */
    private final AtomicLong received = new AtomicLong();

    /** An instance of {@code id} started; its counter. */
    AtomicLong started(String id) {
        started.incrementAndGet();
        AtomicLong counter = new AtomicLong();
        if (live.putIfAbsent(id, counter) != null) {
            localDuplicates.incrementAndGet();
        }
        return counter;
    }

    void stopped(String id, AtomicLong counter) {
        stopped.incrementAndGet();
        live.remove(id, counter);
    }

    /** One message counted by {@code counter}'s instance. */
    long count(AtomicLong counter) {
        received.incrementAndGet();
        return counter.incrementAndGet();
    }

    /** Zeroes every count (the live instances' and the node's total). */
    void reset() {
        received.set(0);
        live.values().forEach(c -> c.set(0));
    }

    /**
     * The {@code check} line: live instances, messages counted since the
     * reset, live instances whose count is not {@code expected} (when
     * {@code expected} is not negative), starts, stops, local duplicates,
     * and (with {@code ids}) every live id.
     */
    EventLine check(long expected, boolean ids) {
        long mismatched = 0;
        List<String> names = new ArrayList<>();
        for (var e : live.entrySet()) {
            if (expected >= 0 && e.getValue().get() != expected) {
                mismatched++;
            }
            if (ids) {
                names.add(e.getKey());
            }
        }
        EventLine line = EventLine.of("check")
                .num("live", live.size())
                .num("received", received.get())
                .num("mismatched", mismatched)
                .num("started", started.get())
                .num("stopped", stopped.get())
                .num("local_duplicates", localDuplicates.get());
        return ids ? line.strings("ids", names) : line;
    }
}
