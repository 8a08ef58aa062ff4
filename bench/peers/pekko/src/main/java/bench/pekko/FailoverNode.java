package bench.pekko;

import java.io.IOException;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Props;

/**
 * The watched node of {@code failover}, a JVM of its own that the watcher
 * ({@link Failover}) starts, kills, stops and continues: an ActorSystem
 * {@value #SYSTEM} on 127.0.0.1:{@code --port} with {@code --watched} targets
 * ({@code /user/target-0..}) and a sink for 10 MB blobs ({@code /user/sink}).
 * It prints {@code ADDRESS <address> PID <pid>} on stdout once it listens,
 * and runs until its stdin closes (or a signal ends it).
 */
final class FailoverNode {
    private FailoverNode() {}

    /** The watched node's ActorSystem name. */
    static final String SYSTEM = "failover-b";

    /** The message that asks a target for its node's pid (answered with a Long). */
    static final String PID = "pid";

    /** Counts the stream's small messages; answers {@link #PID} with this JVM's pid. */
    static final class Target extends AbstractActor {
        private long received;

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(Long.class, n -> received++)
                    .matchEquals(PID, p -> getSender().tell(ProcessHandle.current().pid(), getSelf()))
                    .build();
        }
    }

    /** Acknowledges every blob with its length. */
    static final class Sink extends AbstractActor {
        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(byte[].class, b -> getSender().tell((long) b.length, getSelf()))
                    .build();
        }
    }

    static void run(Args args) throws IOException {
        ActorSystem system = ActorSystem.create(SYSTEM, Settings.failover(args.port, args));
        for (int i = 0; i < args.watched; i++) {
            system.actorOf(Props.create(Target.class, Target::new), "target-" + i);
        }
        system.actorOf(Props.create(Sink.class, Sink::new), "sink");
        Address address = ((ExtendedActorSystem) system).provider().getDefaultAddress();
        Json.line("ADDRESS " + address + " PID " + ProcessHandle.current().pid());
        // Serve until the watcher closes our stdin.
        while (System.in.read() >= 0) {
            // discard
        }
        system.terminate();
    }
}
