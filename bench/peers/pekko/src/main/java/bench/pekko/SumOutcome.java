package bench.pekko;

/**
 * One run of the sum test: what the sender counted (for tell, what it
 * sent; for ask, the right answers and their sum) and what the receiver
 * counted. Verified when both sides have every pair and the sum N².
 */
record SumOutcome(String test, long messages, long elapsedNs, SumSides sides) {

    /** The sum of {@code i + (i + 1)} for i in 0..n. */
    static long expectedSum(long n) {
        return n * n;
    }

    boolean verified() {
        long expected = expectedSum(messages);
        SumTally server = sides.server();
        return sides.wrong() == 0 && sides.clientCount() == messages && sides.clientSum() == expected
                && server.count() == messages && server.sum() == expected;
    }

    /** The line `volley-bench kontraktor` reads, in the kontraktor peer's shape. */
    void emit(long window, long ackEvery) {
        Json line = Json.object()
                .str("scenario", "kontraktor")
                .str("system", "pekko")
                .str("test", test)
                .num("messages", messages)
                .num("elapsed_ns", elapsedNs)
                .num("msgs_per_s", messages * 1e9 / Math.max(elapsedNs, 1));
        if (sides.inFlight() >= 0) {
            line.num("in_flight", sides.inFlight());
        }
        line.num("window", window)
                .num("ack_every", ackEvery)
                .num("client_count", sides.clientCount())
                .num("wrong", sides.wrong())
                .num("client_sum", sides.clientSum())
                .num("server_count", sides.server().count())
                .num("server_sum", sides.server().sum())
                .num("expected_sum", expectedSum(messages))
                .bool("verified", verified())
                .emit();
    }
}
