package bench.pekko;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;

/** Actor-system configuration for each scenario. */
final class Settings {
    private Settings() {}

    /** Worker threads of the default dispatcher: one per core of the 2-core benchmark machine. */
    static final int PARALLELISM = 2;

    /**
     * Default dispatcher (fork-join) with the given throughput and parallelism
     * pinned to {@link #PARALLELISM}; INFO logging and dead-letter logging off
     * so nothing but JSON could ever reach stdout.
     */
    static Config local(int throughput) {
        return ConfigFactory.parseString(String.join("\n",
                        "pekko.loglevel = WARNING",
                        "pekko.stdout-loglevel = WARNING",
                        "pekko.log-dead-letters = off",
                        "pekko.log-dead-letters-during-shutdown = off",
                        "pekko.actor.default-dispatcher {",
                        "  executor = fork-join-executor",
                        "  throughput = " + throughput,
                        "  fork-join-executor {",
                        "    parallelism-min = " + PARALLELISM,
                        "    parallelism-factor = 1.0",
                        "    parallelism-max = " + PARALLELISM,
                        "  }",
                        "}"))
                .withFallback(ConfigFactory.load());
    }

    /**
     * {@link #local} plus Artery TCP on 127.0.0.1 with an ephemeral port, Java
     * serialization disabled and the compact 4-byte serializer bound to {@link RemotePing}.
     */
    static Config remote() {
        return ConfigFactory.parseString(String.join("\n",
                        "pekko.actor.provider = remote",
                        "pekko.actor.allow-java-serialization = off",
                        "pekko.actor.serializers.bench-ping = \"bench.pekko.PingSerializer\"",
                        "pekko.actor.serialization-bindings { \"bench.pekko.RemotePing\" = bench-ping }",
                        "pekko.remote.warn-about-direct-use = off",
                        "pekko.remote.warn-unsafe-watch-outside-cluster = off",
                        "pekko.remote.artery {",
                        "  transport = tcp",
                        "  canonical.hostname = \"127.0.0.1\"",
                        "  canonical.port = 0",
                        "}"))
                .withFallback(local(Args.DEFAULT_THROUGHPUT));
    }

    /**
     * failover: Artery TCP on 127.0.0.1 at {@code port} (0 picks one), remote
     * death watch (which Pekko allows outside a cluster only with
     * {@code use-unsafe-remote-features-outside-cluster}) with the run's
     * failure-detector settings, and a large-message
     * stream (up to 16 MiB frames) for the actor {@code /user/sink} so that
     * 10 MB messages travel beside the ordinary and control streams, as they
     * do on volley's large lane. The reaper interval (how often the watcher
     * checks its detectors; Pekko's default is 1 s) is half the heartbeat
     * interval, as volley's monitor ticks, so that neither system waits for a
     * check that the other makes sooner.
     */
    static Config failover(int port, Args a) {
        return ConfigFactory.parseString(String.join("\n",
                        "pekko.actor.provider = remote",
                        "pekko.actor.allow-java-serialization = off",
                        "pekko.remote.warn-about-direct-use = off",
                        // Remote death watch without Pekko Cluster is off unless
                        // switched on (the watch would be ignored).
                        "pekko.remote.use-unsafe-remote-features-outside-cluster = on",
                        "pekko.remote.artery {",
                        "  transport = tcp",
                        "  canonical.hostname = \"127.0.0.1\"",
                        "  canonical.port = " + port,
                        "  large-message-destinations = [\"/user/sink\"]",
                        "  advanced.maximum-large-frame-size = 16 MiB",
                        "  advanced.large-buffer-pool-size = 4",
                        "}",
                        "pekko.remote.watch-failure-detector {",
                        "  heartbeat-interval = " + a.heartbeatMs + " ms",
                        "  acceptable-heartbeat-pause = " + a.pauseMs + " ms",
                        "  threshold = " + a.threshold,
                        "  min-std-deviation = 100 ms",
                        "  max-sample-size = 200",
                        "  unreachable-nodes-reaper-interval = " + Math.max(1, a.heartbeatMs / 2) + " ms",
                        "}"))
                .withFallback(local(Args.DEFAULT_THROUGHPUT));
    }

    /**
     * Artery's outbound queue for the sum test: it drops what overflows, so
     * it must hold a whole window (the sender's pairs on one side, the
     * answers on the other); Pekko's default is 3072.
     */
    static final int SUM_QUEUE = 65_536;

    /**
     * The sum test ({@link SumServer}, {@link SumClient}): {@link #local}
     * plus Artery TCP on 127.0.0.1 with an ephemeral port, Java
     * serialization disabled, {@link SumSerializer} bound to the sum
     * messages and an outbound queue of {@link #SUM_QUEUE}.
     */
    static Config sum() {
        return ConfigFactory.parseString(String.join("\n",
                        "pekko.actor.provider = remote",
                        "pekko.actor.allow-java-serialization = off",
                        "pekko.actor.serializers.bench-sum = \"bench.pekko.SumSerializer\"",
                        "pekko.actor.serialization-bindings {",
                        "  \"bench.pekko.SumPair\" = bench-sum",
                        "  \"bench.pekko.SumTally\" = bench-sum",
                        "  \"bench.pekko.TakeTally\" = bench-sum",
                        "}",
                        "pekko.remote.warn-about-direct-use = off",
                        "pekko.remote.artery {",
                        "  transport = tcp",
                        "  canonical.hostname = \"127.0.0.1\"",
                        "  canonical.port = 0",
                        "  advanced.outbound-message-queue-size = " + SUM_QUEUE,
                        "}"))
                .withFallback(local(Args.DEFAULT_THROUGHPUT));
    }
}
