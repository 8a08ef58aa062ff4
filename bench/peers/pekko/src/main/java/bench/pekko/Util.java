package bench.pekko;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.pattern.Patterns;

final class Util {
    private Util() {}

    /** How long to wait for any single completion before declaring a run hung. */
    static final Duration TIMEOUT = Duration.ofSeconds(300);

    /** Resident set size in bytes, from VmRSS in /proc/self/status. */
    static long rssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    String kb = line.substring(6).trim().replace("kB", "").trim();
                    return Long.parseLong(kb) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            System.err.println("pekko-bench: cannot read VmRSS: " + e);
        }
        return 0;
    }

    /** Blocking ask from the driver thread (outside any timed region). */
    @SuppressWarnings("unchecked")
    static <T> T ask(ActorRef target, Object msg) throws Exception {
        return (T) Patterns.ask(target, msg, Duration.ofSeconds(30))
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
    }

    static void terminate(ActorSystem system) throws Exception {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
}
