package bench.pekko;

/**
 * How many pairs a receiver got since it last answered {@link TakeTally},
 * and the sum of their {@code a + b}.
 */
public record SumTally(long count, long sum) {}
