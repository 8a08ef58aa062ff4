package bench.pekko;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Props;

/**
 * remote-pingpong, after Akka.NET's RemotePingPong: systems A and B in one JVM
 * talk over Artery TCP on 127.0.0.1. For each client count C, C echo actors are
 * created on B (plain {@code actorOf} on B, then looked up from A with
 * {@code actorSelection(..).resolveOne}) and C clients on A each do R round
 * trips with a fixed number in flight. Total = C * R * 2 messages.
 */
final class RemotePingPong {
    private RemotePingPong() {}

    record Start(ActorRef echo) {}

    enum GetCount { INSTANCE }

    static final class Echo extends AbstractActor {
        private long count;

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(RemotePing.class, p -> {
                        count++;
                        getSender().tell(p, getSelf());
                    })
                    .matchEquals(GetCount.INSTANCE, g -> getSender().tell(count, getSelf()))
                    .build();
        }
    }

    static final class Client extends AbstractActor {
        private final long repeat;
        private final long inflight;
        private final CountDownLatch done;
        private final LongAdder receivedTotal;
        private ActorRef echo;
        private long sent;
        private long received;

        Client(long repeat, long inflight, CountDownLatch done, LongAdder receivedTotal) {
            this.repeat = repeat;
            this.inflight = inflight;
            this.done = done;
            this.receivedTotal = receivedTotal;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(RemotePing.class, this::onReply)
                    .match(Start.class, this::onStart)
                    .build();
        }

        private void onStart(Start s) {
            echo = s.echo();
            long prime = Math.min(inflight, repeat);
            for (; sent < prime; sent++) {
                echo.tell(new RemotePing((int) sent), getSelf());
            }
        }

        private void onReply(RemotePing p) {
            received++;
            if (sent < repeat) {
                echo.tell(new RemotePing((int) sent++), getSelf());
            } else if (received == repeat) {
                receivedTotal.add(received);
                done.countDown();
            }
        }
    }

    static void run(Args args) throws Exception {
        ActorSystem a = ActorSystem.create("pingpong-a", Settings.remote());
        ActorSystem b = ActorSystem.create("pingpong-b", Settings.remote());
        try {
            Address addrB = ((ExtendedActorSystem) b).provider().getDefaultAddress();
            System.err.println("pekko: system B listens on " + addrB);
            int maxClients = 0;
            for (int c : args.clients) {
                maxClients = Math.max(maxClients, c);
            }
            // Artery's code paths need a few seconds of JIT before they settle,
            // more than local actors do: warm up with half the measured load.
            long warmRepeat = Math.min(args.repeat, Math.max(5000, args.repeat / 2));
            System.err.println("pekko: warmup clients=" + maxClients + " repeat=" + warmRepeat);
            round(a, b, addrB, "warmup", maxClients, warmRepeat, args.inflight);

            for (int clients : args.clients) {
                System.err.println("pekko: measuring clients=" + clients + " repeat=" + args.repeat);
                long elapsed = round(a, b, addrB, "c" + clients, clients, args.repeat, args.inflight);
                long total = (long) clients * args.repeat * 2;
                Json.object()
                        .str("scenario", "remote-pingpong")
                        .str("system", "pekko")
                        .num("clients", clients)
                        .num("total", total)
                        .num("elapsed_ns", elapsed)
                        .num("msgs_per_sec", total * 1e9 / elapsed)
                        .emit();
            }
        } finally {
            // Stop both at once; whichever goes second would otherwise log
            // (on stderr) that its peer aborted the connection.
            a.terminate();
            Util.terminate(b);
            Util.terminate(a);
        }
    }

    /** One round with fresh actors; verifies all C * R * 2 messages were received. */
    private static long round(ActorSystem a, ActorSystem b, Address addrB, String tag,
                              int clients, long repeat, int inflight) throws Exception {
        CountDownLatch done = new CountDownLatch(clients);
        LongAdder clientReceived = new LongAdder();
        ActorRef[] echoes = new ActorRef[clients];
        ActorRef[] remoteEchoes = new ActorRef[clients];
        ActorRef[] clientRefs = new ActorRef[clients];
        for (int i = 0; i < clients; i++) {
            String name = "echo-" + tag + "-" + i;
            echoes[i] = b.actorOf(Props.create(Echo.class, Echo::new), name);
            // Resolving through the remote path gives A a real remote ref and
            // completes the Artery handshake before the clock starts.
            remoteEchoes[i] = a.actorSelection(addrB + "/user/" + name)
                    .resolveOne(Util.TIMEOUT)
                    .toCompletableFuture()
                    .get(Util.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            clientRefs[i] = a.actorOf(Props.create(Client.class,
                    () -> new Client(repeat, inflight, done, clientReceived)));
        }

        long start = System.nanoTime();
        for (int i = 0; i < clients; i++) {
            clientRefs[i].tell(new Start(remoteEchoes[i]), ActorRef.noSender());
        }
        if (!done.await(Util.TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
            throw new BenchFailure("timed out; " + done.getCount() + " of " + clients + " clients unfinished");
        }
        long elapsed = System.nanoTime() - start;

        long received = clientReceived.sum();
        for (int i = 0; i < clients; i++) {
            received += Util.<Long>ask(echoes[i], GetCount.INSTANCE);
            a.stop(clientRefs[i]);
            b.stop(echoes[i]);
        }
        long expected = (long) clients * repeat * 2;
        if (received != expected) {
            throw new BenchFailure("actors counted " + received + " received messages, expected " + expected);
        }
        return Math.max(elapsed, 1);
    }
}
