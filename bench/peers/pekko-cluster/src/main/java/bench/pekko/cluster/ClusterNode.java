package bench.pekko.cluster;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.TreeSet;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Leave;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * {@code cluster-node}: one Pekko Cluster member. Joins through the seed
 * nodes and prints a line for every cluster event it sees and for every
 * change of the receptionist's listing of {@link #SERVICE}; obeys stdin
 * commands (see {@link NodeArgs#USAGE}). Lines: {@code started} (own address,
 * pid, the settings in force), {@code joining}, {@code up}, {@code leaving},
 * {@code exiting}, {@code down}, {@code removed}, {@code unreachable},
 * {@code reachable} (each with {@code member}, as host:port), {@code leader}
 * ({@code member}, null when none), {@code listing} ({@code count},
 * {@code nodes}: the host:port of each registered service), and
 * {@code terminated} when the actor system has stopped (after {@code exit},
 * a completed leave, or a downing of this node), {@code sent} ({@code count})
 * after {@code stop}, {@code received} ({@code count}: distinct numbers the
 * sink got) after {@code received}.
 */
final class ClusterNode {
    private ClusterNode() {}

    /** The actor system name, the same on every member. */
    static final String SYSTEM = "cluster-bench";

    /** The receptionist key that {@code register} registers a service under. */
    static final ServiceKey<String> SERVICE = ServiceKey.create(String.class, "bench-service");

    /** stdin commands, as the guardian receives them. */
    enum Command { REGISTER, LEAVE, STOP, RECEIVED, TICK }

    /** {@code stream HOST:PORT}: numbers to that member's sink until {@code stop}. */
    record StreamTo(String hostPort) {}

    /** How often a stream sends its next number. */
    static final Duration STREAM_EVERY = Duration.ofMillis(5);

    static void run(NodeArgs args, EventLine.Sink out) throws IOException {
        var config = NodeConfig.of(args);
        ActorSystem<Object> system = ActorSystem.create(
                Behaviors.setup(ctx -> guardian(ctx, out)), SYSTEM, config);
        Address self = Cluster.get(system).selfMember().address();
        out.emit(NodeConfig.settings(EventLine.of("started")
                .str("node", hostPort(self))
                .num("pid", ProcessHandle.current().pid()), system.settings().config()));
        system.getWhenTerminated().thenRun(() -> {
            out.emit(EventLine.of("terminated").str("node", hostPort(self)));
            System.exit(0);
        });
        readCommands(system);
        system.terminate();
    }

    /** Until end of input or {@code exit}; the rest go to the guardian. */
    private static void readCommands(ActorSystem<Object> system) throws IOException {
        var in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            switch (line.trim()) {
                case "register" -> system.tell(Command.REGISTER);
                case "leave" -> system.tell(Command.LEAVE);
                case "stop" -> system.tell(Command.STOP);
                case "received" -> system.tell(Command.RECEIVED);
                case "exit" -> {
                    return;
                }
                case "" -> { }
                default -> {
                    if (line.trim().startsWith("stream ")) {
                        system.tell(new StreamTo(line.trim().substring("stream ".length()).trim()));
                    } else {
                        System.err.println("cluster-node: unknown command " + line.trim());
                    }
                }
            }
        }
    }

    private static Behavior<Object> guardian(ActorContext<Object> ctx, EventLine.Sink out) {
        return Behaviors.withTimers(timers -> guardian(ctx, out, timers));
    }

    /** What the guardian's stream has sent: where, and how many numbers. */
    private static final class Stream {
        ActorRef<Long> to;
        long sent;
    }

    private static Behavior<Object> guardian(
            ActorContext<Object> ctx, EventLine.Sink out,
            org.apache.pekko.actor.typed.javadsl.TimerScheduler<Object> timers) {
        Cluster cluster = Cluster.get(ctx.getSystem());
        cluster.subscriptions().tell(Subscribe.create(
                ctx.getSelf().<ClusterEvent.ClusterDomainEvent>narrow(), ClusterEvent.ClusterDomainEvent.class));
        ctx.getSystem().receptionist().tell(Receptionist.subscribe(
                SERVICE, ctx.getSelf().<Receptionist.Listing>narrow()));
        Address self = cluster.selfMember().address();
        Set<Long> received = new HashSet<>();
        ctx.spawn(Behaviors.receive(Long.class).onAnyMessage(n -> {
            synchronized (received) {
                received.add(n);
            }
            return Behaviors.same();
        }).build(), "sink");
        Stream stream = new Stream();
        return Behaviors.receive(Object.class)
                .onMessageEquals(Command.REGISTER, () -> {
                    ActorRef<String> service = ctx.spawnAnonymous(Behaviors.ignore());
                    ctx.getSystem().receptionist().tell(Receptionist.register(SERVICE, service));
                    return Behaviors.same();
                })
                .onMessageEquals(Command.LEAVE, () -> {
                    cluster.manager().tell(Leave.create(self));
                    return Behaviors.same();
                })
                .onMessage(StreamTo.class, to -> {
                    String path = "pekko://" + SYSTEM + "@" + to.hostPort() + "/user/sink";
                    stream.to = ActorRefResolver.get(ctx.getSystem()).resolveActorRef(path);
                    stream.sent = 0;
                    timers.startTimerAtFixedRate(Command.TICK, STREAM_EVERY);
                    return Behaviors.same();
                })
                .onMessageEquals(Command.TICK, () -> {
                    if (stream.to != null) {
                        stream.to.tell(stream.sent);
                        stream.sent++;
                    }
                    return Behaviors.same();
                })
                .onMessageEquals(Command.STOP, () -> {
                    timers.cancel(Command.TICK);
                    stream.to = null;
                    out.emit(EventLine.of("sent").num("count", stream.sent));
                    return Behaviors.same();
                })
                .onMessageEquals(Command.RECEIVED, () -> {
                    int count;
                    synchronized (received) {
                        count = received.size();
                    }
                    out.emit(EventLine.of("received").num("count", count));
                    return Behaviors.same();
                })
                .onMessage(Receptionist.Listing.class, listing -> {
                    if (listing.isForKey(SERVICE)) {
                        var nodes = new TreeSet<String>();
                        for (ActorRef<String> ref : listing.getServiceInstances(SERVICE)) {
                            Address a = ref.path().address();
                            nodes.add(a.hasGlobalScope() ? hostPort(a) : hostPort(self));
                        }
                        out.emit(EventLine.of("listing").num("count", nodes.size()).strings("nodes", nodes));
                    }
                    return Behaviors.same();
                })
                .onMessage(ClusterEvent.ClusterDomainEvent.class, e -> {
                    EventLine line = describe(e);
                    if (line != null) {
                        out.emit(line);
                    }
                    return Behaviors.same();
                })
                .build();
    }

    /** The line for a cluster event, or null for the ones not reported (internal, seen-by). */
    static EventLine describe(ClusterEvent.ClusterDomainEvent e) {
        if (e instanceof ClusterEvent.LeaderChanged l) {
            return EventLine.of("leader").str("member", l.getLeader() == null ? null : hostPort(l.getLeader()));
        }
        String name;
        Member member;
        if (e instanceof ClusterEvent.MemberEvent m) {
            member = m.member();
            name = memberEvent(m);
        } else if (e instanceof ClusterEvent.UnreachableMember u) {
            member = u.member();
            name = "unreachable";
        } else if (e instanceof ClusterEvent.ReachableMember r) {
            member = r.member();
            name = "reachable";
        } else {
            return null;
        }
        return name == null ? null : EventLine.of(name).str("member", hostPort(member.address()));
    }

    private static String memberEvent(ClusterEvent.MemberEvent m) {
        if (m instanceof ClusterEvent.MemberJoined) {
            return "joining";
        } else if (m instanceof ClusterEvent.MemberUp) {
            return "up";
        } else if (m instanceof ClusterEvent.MemberLeft) {
            return "leaving";
        } else if (m instanceof ClusterEvent.MemberExited) {
            return "exiting";
        } else if (m instanceof ClusterEvent.MemberDowned) {
            return "down";
        } else if (m instanceof ClusterEvent.MemberRemoved) {
            return "removed";
        }
        // WeaklyUp and PreparingForShutdown/ReadyForShutdown (off or unused here).
        return null;
    }

    static String hostPort(Address a) {
        return a.getHost().orElse("?") + ":" + a.getPort().map(String::valueOf).orElse("?");
    }
}
