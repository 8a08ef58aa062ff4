package bench.pekko;

/** A run that completed wrongly (lost messages, timeouts): exit code 1. */
final class BenchFailure extends Exception {
    private static final long serialVersionUID = 1L;

    BenchFailure(String message) {
        super(message);
    }
}
