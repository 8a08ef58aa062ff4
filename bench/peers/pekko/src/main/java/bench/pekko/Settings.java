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
}
