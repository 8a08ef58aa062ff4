package bench.pekko.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.util.stream.Collectors;

/** The configuration of one cluster member, and the settings it reports. */
final class NodeConfig {
    private NodeConfig() {}

    /** One worker thread per core of the 2-core benchmark machine, as the other Pekko rows. */
    static final int PARALLELISM = 2;

    /**
     * Artery TCP on 127.0.0.1 (canonical port {@code --port}, bound to
     * {@code --bind-port}), the split-brain resolver as downing provider with
     * keep-majority, the run's failure-detector and stable-after timings;
     * everything else is Pekko's default. INFO logs go to stderr.
     */
    static Config of(NodeArgs a) {
        String seeds = a.seeds.stream()
                .map(s -> "\"pekko://" + ClusterNode.SYSTEM + "@" + s + "\"")
                .collect(Collectors.joining(", "));
        return ConfigFactory.parseString(String.join("\n",
                        // pekko-actor-typed switches Pekko's logging to SLF4J, which has
                        // no backend here; the classic logger writes to System.out,
                        // which Main points at stderr.
                        "pekko.use-slf4j = off",
                        "pekko.loglevel = INFO",
                        "pekko.stdout-loglevel = WARNING",
                        "pekko.log-dead-letters = off",
                        "pekko.log-dead-letters-during-shutdown = off",
                        "pekko.actor.provider = cluster",
                        "pekko.actor.default-dispatcher.fork-join-executor {",
                        "  parallelism-min = " + PARALLELISM,
                        "  parallelism-factor = 1.0",
                        "  parallelism-max = " + PARALLELISM,
                        "}",
                        "pekko.remote.artery {",
                        "  transport = tcp",
                        "  canonical.hostname = \"127.0.0.1\"",
                        "  canonical.port = " + a.port,
                        "  bind.hostname = \"127.0.0.1\"",
                        "  bind.port = " + a.bindPort,
                        "}",
                        "pekko.cluster {",
                        "  seed-nodes = [" + seeds + "]",
                        "  downing-provider-class = \"org.apache.pekko.cluster.sbr.SplitBrainResolverProvider\"",
                        "  split-brain-resolver.active-strategy = keep-majority",
                        "  split-brain-resolver.stable-after = " + a.stableAfterMs + " ms",
                        "  failure-detector.heartbeat-interval = " + a.heartbeatMs + " ms",
                        "  failure-detector.acceptable-heartbeat-pause = " + a.pauseMs + " ms",
                        "  jmx.enabled = off",
                        "}"))
                .withFallback(ConfigFactory.load());
    }

    /** The timings in force, on the {@code started} line, so that every run prints its settings. */
    static EventLine settings(EventLine line, Config c) {
        String fd = "pekko.cluster.failure-detector.";
        String sbr = "pekko.cluster.split-brain-resolver.";
        return line
                .num("heartbeat_ms", ms(c, fd + "heartbeat-interval"))
                .num("acceptable_pause_ms", ms(c, fd + "acceptable-heartbeat-pause"))
                .str("threshold", c.getString(fd + "threshold"))
                .num("min_std_deviation_ms", ms(c, fd + "min-std-deviation"))
                .num("stable_after_ms", ms(c, sbr + "stable-after"))
                .str("down_all_when_unstable", c.getString(sbr + "down-all-when-unstable"))
                .str("active_strategy", c.getString(sbr + "active-strategy"))
                .num("gossip_interval_ms", ms(c, "pekko.cluster.gossip-interval"))
                .num("leader_actions_interval_ms", ms(c, "pekko.cluster.leader-actions-interval"))
                .num("reaper_interval_ms", ms(c, "pekko.cluster.unreachable-nodes-reaper-interval"))
                .num("receptionist_gossip_ms",
                        ms(c, "pekko.cluster.typed.receptionist.distributed-data.gossip-interval"))
                .num("receptionist_notify_ms",
                        ms(c, "pekko.cluster.typed.receptionist.distributed-data.notify-subscribers-interval"));
    }

    private static long ms(Config c, String path) {
        return c.getDuration(path).toMillis();
    }
}
