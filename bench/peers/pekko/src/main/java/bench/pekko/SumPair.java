package bench.pekko;

/** The sum test's message: one pair {@code (a, b)}; 8 bytes on the wire ({@link SumSerializer}). */
public record SumPair(int a, int b) {}
