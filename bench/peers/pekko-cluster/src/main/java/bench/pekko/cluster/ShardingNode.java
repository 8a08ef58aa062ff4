package bench.pekko.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.TreeSet;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.cluster.sharding.typed.GetClusterShardingStats;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.ClusterSingleton;
import org.apache.pekko.cluster.typed.Leave;
import org.apache.pekko.cluster.typed.SingletonActor;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * {@code sharding-node}: one Pekko Cluster member running the sharded
 * entity {@link Entity#KEY} and the cluster singleton, driven over stdin by
 * {@code volley-bench sharding}. Prints the cluster lines of
 * {@link ClusterNode} and: {@code row} (a {@link Load} finished),
 * {@code check} ({@link Instances#check}), {@code stop-load} (ends the running load), {@code shards} ({@code regions}:
 * "host:port=shards" per region, {@code failed}: shards that did not
 * answer), {@code singleton} ({@code port}: the node whose singleton
 * answered, each time it changes), {@code reset}.
 */
final class ShardingNode {
    private ShardingNode() {}

    /** A stdin command for the guardian. */
    record Line(String text) {}

    /** The next singleton ping. */
    private enum Tick { PING }

    private record Stats(ShardRegion.ClusterShardingStats stats) {}

    private record Pong(long port) {}

    static final Duration PING_EVERY = Duration.ofMillis(50);

    /** A ping that timed out (the singleton is moving). */
    private static final long NO_ANSWER = -1;

    static void run(ShardingArgs args, EventLine.Sink out) throws IOException {
        Config config = config(args);
        Instances instances = new Instances();
        ActorSystem<Object> system = ActorSystem.create(
                Behaviors.setup(ctx -> guardian(ctx, out, instances, args.node.port)),
                ClusterNode.SYSTEM, config);
        Address self = Cluster.get(system).selfMember().address();
        Config c = system.settings().config();
        String s = "pekko.cluster.sharding.";
        out.emit(NodeConfig.settings(EventLine.of("started")
                .str("node", ClusterNode.hostPort(self))
                .num("pid", ProcessHandle.current().pid()), c)
                .num("shards", c.getInt(s + "number-of-shards"))
                .num("rebalance_interval_ms", c.getDuration(s + "rebalance-interval").toMillis())
                .num("rebalance_absolute_limit", c.getInt(s + "least-shard-allocation-strategy.rebalance-absolute-limit"))
                .str("rebalance_relative_limit", c.getString(s + "least-shard-allocation-strategy.rebalance-relative-limit"))
                .str("passivation", c.getString(s + "passivation.strategy"))
                .str("remember_entities", c.getString(s + "remember-entities")));
        system.getWhenTerminated().thenRun(() -> {
            out.emit(EventLine.of("terminated").str("node", ClusterNode.hostPort(self)));
            System.exit(0);
        });
        var in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null && !line.trim().equals("exit"); line = in.readLine()) {
            if (!line.isBlank()) {
                system.tell(new Line(line.trim()));
            }
        }
        system.terminate();
    }

    /**
     * {@link NodeConfig}'s cluster, plus: the shard count, the newer
     * least-shard allocation strategy's limits and the rebalance interval
     * as given, no automatic passivation (entities live for the whole run,
     * as on volley's side), no remembered entities, and the bench messages
     * bound to {@link BenchSerializer}.
     */
    static Config config(ShardingArgs a) {
        return ConfigFactory.parseString(String.join("\n",
                        "pekko.actor.serializers.bench = \"" + BenchSerializer.class.getName() + "\"",
                        "pekko.actor.serialization-bindings { \"" + ShardMsg.class.getName() + "\" = bench }",
                        "pekko.cluster.sharding {",
                        "  number-of-shards = " + a.shards,
                        "  rebalance-interval = " + a.rebalanceMs + " ms",
                        "  least-shard-allocation-strategy.rebalance-absolute-limit = " + a.absoluteLimit,
                        "  least-shard-allocation-strategy.rebalance-relative-limit = "
                                + String.format(Locale.ROOT, "%s", a.relativeLimit),
                        "  passivation.strategy = none",
                        "  remember-entities = off",
                        "}"))
                .withFallback(NodeConfig.of(a.node));
    }

    private static Behavior<Object> guardian(
            ActorContext<Object> ctx, EventLine.Sink out, Instances instances, long port) {
        Cluster cluster = Cluster.get(ctx.getSystem());
        cluster.subscriptions().tell(Subscribe.create(
                ctx.getSelf().<ClusterEvent.ClusterDomainEvent>narrow(), ClusterEvent.ClusterDomainEvent.class));
        ClusterSharding sharding = ClusterSharding.get(ctx.getSystem());
        sharding.init(org.apache.pekko.cluster.sharding.typed.javadsl.Entity.of(
                Entity.KEY, entity -> Entity.create(entity.getEntityId(), instances)));
        ActorRef<ShardMsg> singleton = ClusterSingleton.get(ctx.getSystem())
                .init(SingletonActor.of(Entity.singleton(port), "bench-singleton"));
        long[] lastPort = {-1};
        @SuppressWarnings("unchecked")
        ActorRef<Object>[] load = new ActorRef[1];
        return Behaviors.withTimers(timers -> Behaviors.receive(Object.class)
                .onMessage(Line.class, l -> {
                    try {
                        obey(ctx, out, instances, l.text(), timers, load);
                    } catch (RuntimeException e) {
                        // A bad command is reported, never the end of the node.
                        out.emit(EventLine.of("error").str("command", l.text()).str("error", e.toString()));
                    }
                    return Behaviors.same();
                })
                .onMessageEquals(Tick.PING, () -> {
                    ctx.ask(ShardMsg.Reply.class, singleton, PING_EVERY.multipliedBy(10),
                            r -> new ShardMsg.Add(0, r),
                            (reply, failure) -> new Pong(reply == null ? NO_ANSWER : reply.value()));
                    return Behaviors.same();
                })
                .onMessage(Pong.class, p -> {
                    if (p.port() != NO_ANSWER && p.port() != lastPort[0]) {
                        lastPort[0] = p.port();
                        out.emit(EventLine.of("singleton").num("port", p.port()));
                    }
                    return Behaviors.same();
                })
                .onMessage(Stats.class, s -> {
                    out.emit(shardsLine(s.stats()));
                    return Behaviors.same();
                })
                .onMessage(ClusterEvent.ClusterDomainEvent.class, e -> {
                    EventLine line = ClusterNode.describe(e);
                    if (line != null) {
                        out.emit(line);
                    }
                    return Behaviors.same();
                })
                .build());
    }

    /** One stdin command. */
    private static void obey(ActorContext<Object> ctx, EventLine.Sink out, Instances instances, String text,
            org.apache.pekko.actor.typed.javadsl.TimerScheduler<Object> timers, ActorRef<Object>[] load) {
        if (text.equals("ping-singleton")) {
            timers.startTimerWithFixedDelay(Tick.PING, PING_EVERY);
        } else if (text.equals("stop-load")) {
            if (load[0] != null) {
                load[0].tell(Load.Stop.STOP);
            }
        } else if (text.startsWith("run ")) {
            load[0] = ctx.spawnAnonymous(Load.create(Load.Spec.parse(text), out));
        } else {
            command(ctx, out, instances, text);
        }
    }

    /** Every command but {@code ping-singleton}, {@code run} and {@code stop-load} (which keep state). */
    private static void command(ActorContext<Object> ctx, EventLine.Sink out, Instances instances, String text) {
        String[] w = text.split("\\s+");
        switch (w[0]) {
            case "reset" -> {
                instances.reset();
                out.emit(EventLine.of("reset"));
            }
            case "check" -> out.emit(instances.check(Long.parseLong(w[1]), w.length > 2 && w[2].equals("ids")));
            case "shards" -> ctx.ask(ShardRegion.ClusterShardingStats.class,
                    ClusterSharding.get(ctx.getSystem()).shardState(), Duration.ofSeconds(5),
                    r -> new GetClusterShardingStats(Entity.KEY, Duration.ofSeconds(3), r),
                    (stats, failure) -> stats == null
                            ? new Stats(new ShardRegion.ClusterShardingStats(
                                    scala.collection.immutable.Map$.MODULE$.empty()))
                            : new Stats(stats));
            case "leave" -> {
                Cluster cluster = Cluster.get(ctx.getSystem());
                cluster.manager().tell(Leave.create(cluster.selfMember().address()));
            }
            default -> System.err.println("sharding-node: unknown command " + text);
        }
    }

    /** {@code shards}: per region its host:port and shard count; the shards that did not answer. */
    private static EventLine shardsLine(ShardRegion.ClusterShardingStats stats) {
        var regions = new TreeSet<String>();
        long failed = 0;
        for (var e : stats.getRegions().entrySet()) {
            regions.add(ClusterNode.hostPort(e.getKey()) + "=" + e.getValue().getStats().size());
            failed += e.getValue().getFailed().size();
        }
        return EventLine.of("shards").strings("regions", regions).num("failed", failed);
    }
}
