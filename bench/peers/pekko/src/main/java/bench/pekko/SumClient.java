package bench.pekko;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;

/**
 * The sending JVM of the seed's "tell sum" / "ask sum" on Artery TCP: an
 * ActorSystem {@code sum-a} that resolves the receivers of the
 * {@link SumServer} at {@code --server}, runs a warm-up of
 * {@code --warmup-messages} pairs (its line goes to stderr), then
 * {@code --runs} runs of {@code --messages} pairs, each with a fresh sender
 * actor, and prints one {@link SumOutcome} line per run. A run that is not
 * verified is printed like any other (the driver checks every line); only
 * a run that does not finish fails the program.
 */
final class SumClient {
    private SumClient() {}

    static void run(Args args) throws Exception {
        if (args.window >= Settings.SUM_QUEUE) {
            throw new BenchFailure("--window " + args.window + " must stay below Artery's outbound queue ("
                    + Settings.SUM_QUEUE + "), or the queue would drop");
        }
        ActorSystem system = ActorSystem.create("sum-a", Settings.sum());
        try {
            String name = args.test.equals("tell") ? SumServer.TELL : SumServer.ASK;
            ActorRef receiver = system.actorSelection(args.server + "/user/" + name)
                    .resolveOne(Util.TIMEOUT)
                    .toCompletableFuture()
                    .get(Util.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            if (args.warmupMessages > 0) {
                SumOutcome w = once(system, receiver, args, args.warmupMessages);
                System.err.println("pekko-bench: warm-up of " + args.warmupMessages + " " + args.test
                        + (w.verified() ? " verified" : " NOT verified") + ": " + w);
            }
            for (long r = 0; r < args.runs; r++) {
                once(system, receiver, args, args.messages).emit(args.window, args.ackEvery);
            }
        } finally {
            Util.terminate(system);
        }
    }

    /** One run of {@code n} pairs with a fresh sender actor. */
    private static SumOutcome once(ActorSystem system, ActorRef receiver, Args args, long n) throws Exception {
        CompletableFuture<SumSides> done = new CompletableFuture<>();
        boolean tell = args.test.equals("tell");
        ActorRef sender = tell
                ? system.actorOf(Props.create(SumTellSender.class, () -> new SumTellSender(receiver)))
                : system.actorOf(Props.create(SumAskSender.class, () -> new SumAskSender(receiver)));
        long start = System.nanoTime();
        sender.tell(tell ? new SumTellSender.Start(n, args.window, done) : new SumAskSender.Start(n, args.window, done),
                ActorRef.noSender());
        SumSides sides;
        try {
            sides = done.get(Util.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new BenchFailure(args.test + " run of " + n + " did not finish within " + Util.TIMEOUT
                    + " (a pair, an ack or the tally was lost?)");
        }
        long elapsed = System.nanoTime() - start;
        system.stop(sender);
        return new SumOutcome(args.test, n, elapsed, sides);
    }
}
