package bench.pekko;

/**
 * What both sides of one sum run counted: the sender (for tell, what it
 * sent; for ask, the right answers, their sum and how many were wrong or
 * failed, and the most asks outstanding at once, -1 for tell) and the
 * receiver's {@link SumTally}.
 */
record SumSides(long clientCount, long wrong, long clientSum, long inFlight, SumTally server) {}
