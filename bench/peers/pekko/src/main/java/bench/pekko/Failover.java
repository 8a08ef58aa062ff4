package bench.pekko;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSelection;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;
import org.apache.pekko.actor.Terminated;
import org.apache.pekko.pattern.Patterns;
import org.apache.pekko.remote.artery.QuarantinedEvent;

/**
 * failover: remote death watch under failures, the same cases and timeline
 * as {@code volley-bench failover} (see docs/benchmarks-remote.md). This JVM
 * is the watcher; for every case it starts a fresh watched node (a second JVM
 * running {@link FailoverNode}) and a fresh watcher ActorSystem, resolves the
 * node's targets, watches them all from one actor ({@code context.watch} on
 * the remote refs), streams small messages to them, lets the failure
 * detector settle, then kills (SIGKILL), stops (SIGSTOP / SIGCONT) or
 * restarts the node, or streams 10 MB blobs beside the heartbeats. One JSON
 * line per case.
 */
final class Failover {
    private Failover() {}

    /** One blob of the large-messages case. */
    static final int BLOB_BYTES = 10_000_000;
    /** Blobs in flight (each acknowledged by the sink). */
    static final int BLOB_WINDOW = 2;
    /** The small-message stream: {@link #STREAM_BATCH} messages every {@link #STREAM_PERIOD_MS}. */
    static final long STREAM_PERIOD_MS = 10;
    static final int STREAM_BATCH = 20;
    /** How often the restart case asks the new incarnation. */
    static final long PROBE_PERIOD_MS = 10;
    static final String ALIVE = "alive";

    /** What one case measured: its JSON line. */
    record Outcome(int watched, int terminated, int falseTerminated, boolean watcherAlive,
                   Double detectMs, Double reassociateMs, String detail) {}

    /** The Terminated signals the watcher got, by actor, with their arrival times. */
    static final class Terminations {
        private final List<String> actors = new ArrayList<>();
        private final List<Long> at = new ArrayList<>();

        synchronized void add(String actor, long nanos) {
            actors.add(actor);
            at.add(nanos);
            notifyAll();
        }

        synchronized int total() {
            return actors.size();
        }

        synchronized int distinct() {
            return new HashSet<>(actors).size();
        }

        synchronized Long first() {
            return at.isEmpty() ? null : at.get(0);
        }

        /** Waits until n distinct actors terminated; the n-th one's arrival, or null at the deadline. */
        synchronized Long awaitDistinct(int n, long deadline) throws InterruptedException {
            while (true) {
                Set<String> seen = new HashSet<>();
                for (int i = 0; i < actors.size(); i++) {
                    if (seen.add(actors.get(i)) && seen.size() == n) {
                        return at.get(i);
                    }
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
    }

    /** Watches every target; records each Terminated and survives it. */
    static final class Watcher extends AbstractActor {
        private final List<ActorRef> targets;
        private final Terminations terminations;

        Watcher(List<ActorRef> targets, Terminations terminations) {
            this.targets = targets;
            this.terminations = terminations;
        }

        @Override
        public void preStart() {
            for (ActorRef t : targets) {
                getContext().watch(t);
            }
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(Terminated.class, t -> terminations.add(t.getActor().path().toString(), System.nanoTime()))
                    .matchEquals(ALIVE, m -> getSender().tell(ALIVE, getSelf()))
                    .build();
        }
    }

    /** Completes with the arrival time of the first answer from the node with pid {@code expected}. */
    static final class Probe extends AbstractActor {
        private final long expected;
        private final CompletableFuture<Long> answered;

        Probe(long expected, CompletableFuture<Long> answered) {
            this.expected = expected;
            this.answered = answered;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(Long.class, pid -> {
                        if (pid == expected) {
                            answered.complete(System.nanoTime());
                        }
                    })
                    .build();
        }
    }

    /** Keeps {@link #BLOB_WINDOW} blobs in flight to the sink until told to stop. */
    static final class BlobSender extends AbstractActor {
        private final ActorRef sink;
        private final byte[] blob = new byte[BLOB_BYTES];
        private final CompletableFuture<Long> drained;
        private boolean stopping;
        private int outstanding;
        private long acked;

        BlobSender(ActorRef sink, CompletableFuture<Long> drained) {
            this.sink = sink;
            this.drained = drained;
        }

        private void send() {
            sink.tell(blob, getSelf());
            outstanding++;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .matchEquals("start", m -> {
                        for (int i = 0; i < BLOB_WINDOW; i++) {
                            send();
                        }
                    })
                    .match(Long.class, ack -> {
                        outstanding--;
                        acked++;
                        if (!stopping) {
                            send();
                        } else if (outstanding == 0) {
                            drained.complete(acked);
                        }
                    })
                    .matchEquals("stop", m -> {
                        stopping = true;
                        if (outstanding == 0) {
                            drained.complete(acked);
                        }
                    })
                    .build();
        }
    }

    /** Counts Artery's quarantine events on the watcher's side. */
    static final class QuarantineCounter extends AbstractActor {
        private final AtomicInteger count;

        QuarantineCounter(AtomicInteger count) {
            this.count = count;
        }

        @Override
        public void preStart() {
            getContext().getSystem().getEventStream().subscribe(getSelf(), QuarantinedEvent.class);
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder().match(QuarantinedEvent.class, e -> count.incrementAndGet()).build();
        }
    }

    /** A watched-node JVM. */
    static final class Node implements AutoCloseable {
        final Process process;
        final String address;
        final int port;
        final long pid;
        /** When its address line arrived: the ActorSystem is up and listening. */
        final long upNanos;

        private Node(Process process, String address, int port, long pid, long upNanos) {
            this.process = process;
            this.address = address;
            this.port = port;
            this.pid = pid;
            this.upNanos = upNanos;
        }

        static Node start(Args a, int port) throws Exception {
            String java = ProcessHandle.current().info().command().orElse("java");
            String jar = Path.of(Failover.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                    .toString();
            List<String> cmd = List.of(java, "-cp", jar, "bench.pekko.Main", "failover-node",
                    "--port", Integer.toString(port),
                    "--watched", Integer.toString(a.watched),
                    "--heartbeat-ms", Long.toString(a.heartbeatMs),
                    "--pause-ms", Long.toString(a.pauseMs),
                    "--threshold", Double.toString(a.threshold));
            Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            BlockingQueue<String> lines = new LinkedBlockingQueue<>();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(
                        new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    String l;
                    while ((l = r.readLine()) != null) {
                        if (l.startsWith("ADDRESS ")) {
                            lines.add(l);
                        }
                    }
                } catch (IOException ignored) {
                    // the node is gone
                }
            }, "failover-node-stdout");
            reader.setDaemon(true);
            reader.start();
            String line = lines.poll(60, TimeUnit.SECONDS);
            long up = System.nanoTime();
            if (line == null) {
                p.destroyForcibly();
                throw new BenchFailure("the failover node did not print its address within 60 s");
            }
            // ADDRESS <address> PID <pid>
            String[] parts = line.split(" ");
            String address = parts[1];
            int bound = Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
            return new Node(p, address, bound, Long.parseLong(parts[3]), up);
        }

        /** Sends SIGSTOP or SIGCONT; returns once it is delivered. */
        void signal(String sig) throws Exception {
            Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(pid))
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
                throw new BenchFailure("kill -" + sig + " " + pid + " failed");
            }
        }

        /** SIGKILL (kill -9). */
        void kill() {
            process.destroyForcibly();
        }

        @Override
        public void close() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    static void run(Args a) throws Exception {
        ScheduledExecutorService timer = Executors.newScheduledThreadPool(2, r -> {
            Thread t = new Thread(r, "failover-timer");
            t.setDaemon(true);
            return t;
        });
        System.err.printf(Locale.ROOT,
                "pekko failover: heartbeat-interval %d ms, acceptable-heartbeat-pause %d ms, threshold %s, "
                        + "%d watched actors%n",
                a.heartbeatMs, a.pauseMs, a.threshold, a.watched);
        try {
            for (String kase : a.cases) {
                System.err.println("pekko failover: case " + kase);
                Outcome o = runCase(kase, a, timer);
                System.err.println("pekko failover: " + kase + ": " + o.detail());
                Json.object()
                        .str("scenario", "failover")
                        .str("system", "pekko")
                        .str("case", kase)
                        .num("watched", o.watched())
                        .num("terminated", o.terminated())
                        .num("false_terminated", o.falseTerminated())
                        .bool("watcher_alive", o.watcherAlive())
                        .millis("detect_ms", o.detectMs())
                        .millis("reassociate_ms", o.reassociateMs())
                        .str("detail", o.detail())
                        .emit();
            }
        } finally {
            timer.shutdownNow();
        }
    }

    private static long nanos(long ms) {
        return TimeUnit.MILLISECONDS.toNanos(ms);
    }

    private static Double millisSince(long t0, Long t) {
        return t == null ? null : (t - t0) / 1e6;
    }

    private static String ms(Double v) {
        return v == null ? "never" : String.format(Locale.ROOT, "%.0f ms", v);
    }

    /** Asks {@code ref} for its node's pid; null when no answer comes within 5 s. */
    private static Long pid(ActorRef ref) {
        try {
            return (Long) Patterns.ask(ref, FailoverNode.PID, Duration.ofSeconds(5))
                    .toCompletableFuture()
                    .get(6, TimeUnit.SECONDS);
        } catch (Exception e) {
            return null;
        }
    }

    private static boolean alive(ActorRef watcher) {
        try {
            Patterns.ask(watcher, ALIVE, Duration.ofSeconds(5)).toCompletableFuture().get(6, TimeUnit.SECONDS);
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    private static Outcome runCase(String kase, Args a, ScheduledExecutorService timer) throws Exception {
        List<Node> nodes = new ArrayList<>();
        Node node = Node.start(a, 0);
        nodes.add(node);
        ActorSystem sys = ActorSystem.create("failover-a", Settings.failover(0, a));
        List<ScheduledFuture<?>> tasks = new ArrayList<>();
        try {
            List<ActorRef> targets = new ArrayList<>();
            for (int i = 0; i < a.watched; i++) {
                ActorRef t = sys.actorSelection(node.address + "/user/target-" + i)
                        .resolveOne(Duration.ofSeconds(30))
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                if (pid(t) == null) {
                    throw new BenchFailure("target-" + i + " did not answer before the case");
                }
                targets.add(t);
            }
            AtomicInteger quarantined = new AtomicInteger();
            sys.actorOf(Props.create(QuarantineCounter.class, () -> new QuarantineCounter(quarantined)));
            Terminations terms = new Terminations();
            ActorRef watcher = sys.actorOf(Props.create(Watcher.class, () -> new Watcher(targets, terms)),
                    "watcher");
            AtomicLong sent = new AtomicLong();
            tasks.add(timer.scheduleAtFixedRate(() -> {
                for (int j = 0; j < STREAM_BATCH; j++) {
                    long n = sent.getAndIncrement();
                    targets.get((int) (n % targets.size())).tell(n, ActorRef.noSender());
                }
            }, 0, STREAM_PERIOD_MS, TimeUnit.MILLISECONDS));
            // A random extra wait below one heartbeat interval, so that the
            // failure falls at any point between two heartbeats (the detection
            // time depends on it), as volley's side does.
            Thread.sleep(a.settleMs + ThreadLocalRandom.current().nextLong(a.heartbeatMs));

            int watched = targets.size();
            boolean failure = true;
            Double detect = null;
            Double reassociate = null;
            String detail;
            switch (kase) {
                case "kill" -> {
                    node.kill();
                    long t0 = System.nanoTime();
                    detect = millisSince(t0, terms.awaitDistinct(watched, t0 + nanos(a.detectTimeoutMs)));
                    Thread.sleep(a.windowMs);
                    detail = "first Terminated " + ms(millisSince(t0, terms.first())) + " after the kill";
                }
                case "stall-short" -> {
                    failure = false;
                    node.signal("STOP");
                    Thread.sleep(a.stallShortMs);
                    node.signal("CONT");
                    Thread.sleep(a.windowMs);
                    Long pid = pid(targets.get(0));
                    detail = "stopped " + a.stallShortMs + " ms; target-0 answered after SIGCONT: "
                            + (pid != null ? "yes" : "no");
                }
                case "stall-long" -> {
                    node.signal("STOP");
                    long t0 = System.nanoTime();
                    detect = millisSince(t0, terms.awaitDistinct(watched, t0 + nanos(a.detectTimeoutMs)));
                    long stopped = (System.nanoTime() - t0) / 1_000_000;
                    node.signal("CONT");
                    Thread.sleep(a.windowMs);
                    detail = "stopped " + stopped + " ms (until every Terminated or the timeout)";
                }
                case "restart" -> {
                    int port = node.port;
                    node.kill();
                    long t0 = System.nanoTime();
                    node.close();
                    Node fresh = Node.start(a, port);
                    nodes.add(fresh);
                    CompletableFuture<Long> answered = new CompletableFuture<>();
                    ActorRef probe = sys.actorOf(Props.create(Probe.class, () -> new Probe(fresh.pid, answered)));
                    ActorSelection sel = sys.actorSelection(fresh.address + "/user/target-0");
                    ScheduledFuture<?> asks = timer.scheduleAtFixedRate(
                            () -> sel.tell(FailoverNode.PID, probe), 0, PROBE_PERIOD_MS, TimeUnit.MILLISECONDS);
                    Long at;
                    try {
                        at = answered.get(a.detectTimeoutMs, TimeUnit.MILLISECONDS);
                    } catch (TimeoutException e) {
                        at = null;
                    }
                    asks.cancel(false);
                    reassociate = millisSince(fresh.upNanos, at);
                    Long all = terms.awaitDistinct(watched, t0 + nanos(a.detectTimeoutMs));
                    Thread.sleep(a.windowMs);
                    detail = "new node up " + ms(millisSince(t0, fresh.upNanos)) + " after the kill, answered "
                            + ms(millisSince(t0, at)) + " after the kill; old incarnation's Terminated: first "
                            + ms(millisSince(t0, terms.first())) + ", all " + ms(millisSince(t0, all))
                            + " after the kill";
                }
                case "large-messages" -> {
                    failure = false;
                    ActorRef sink = sys.actorSelection(node.address + "/user/sink")
                            .resolveOne(Duration.ofSeconds(30))
                            .toCompletableFuture()
                            .get(30, TimeUnit.SECONDS);
                    CompletableFuture<Long> drained = new CompletableFuture<>();
                    ActorRef sender = sys.actorOf(Props.create(BlobSender.class,
                            () -> new BlobSender(sink, drained)));
                    long t0 = System.nanoTime();
                    sender.tell("start", ActorRef.noSender());
                    Thread.sleep(a.largeMs);
                    sender.tell("stop", ActorRef.noSender());
                    Long blobs;
                    try {
                        blobs = drained.get(60, TimeUnit.SECONDS);
                    } catch (TimeoutException e) {
                        blobs = null;
                    }
                    double secs = (System.nanoTime() - t0) / 1e9;
                    Thread.sleep(a.windowMs);
                    Long pid = pid(targets.get(0));
                    detail = blobs == null
                            ? "the blob stream did not drain within 60 s"
                            : String.format(Locale.ROOT, "%d blobs of 10 MB acknowledged in %.1f s (%.0f MB/s)",
                                    blobs, secs, blobs * (BLOB_BYTES / 1e6) / secs);
                    detail += "; target-0 answered afterwards: " + (pid != null ? "yes" : "no");
                }
                default -> throw new IllegalStateException(kase);
            }
            boolean watcherAlive = alive(watcher);
            int total = terms.total();
            // Where the node failed, one Terminated per watched actor is right and
            // the rest are duplicates; where it did not, every Terminated is false.
            int falseTerminated = failure ? total - terms.distinct() : total;
            detail += "; quarantine events " + quarantined.get();
            return new Outcome(watched, total, falseTerminated, watcherAlive, detect, reassociate, detail);
        } finally {
            for (ScheduledFuture<?> t : tasks) {
                t.cancel(false);
            }
            sys.terminate();
            try {
                sys.getWhenTerminated().toCompletableFuture().get(20, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                System.err.println("pekko failover: the watcher system did not terminate within 20 s");
            }
            for (Node n : nodes) {
                n.close();
            }
        }
    }
}
