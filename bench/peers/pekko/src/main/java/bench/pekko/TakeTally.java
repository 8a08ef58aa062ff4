package bench.pekko;

/**
 * Asks a sum receiver for its {@link SumTally} and resets it. Sent on the
 * same Artery stream after the last pair, so the answer covers them all.
 */
public enum TakeTally {
    INSTANCE
}
