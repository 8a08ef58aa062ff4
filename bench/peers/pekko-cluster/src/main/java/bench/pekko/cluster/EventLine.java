package bench.pekko.cluster;

import java.io.PrintStream;
import java.time.Instant;
import java.util.Collection;
import java.util.Locale;

/**
 * One event line on stdout: a flat JSON object whose first fields are
 * {@code t_ms} (wall-clock epoch milliseconds with microseconds; every node
 * runs on the same machine, so lines of different nodes compare) and
 * {@code event}.
 */
final class EventLine {
    /** The real stdout, shared by the actor and the stdin thread. */
    static final class Sink {
        private final PrintStream out;

        Sink(PrintStream out) {
            this.out = out;
        }

        synchronized void emit(EventLine line) {
            out.println(line.sb.append('}'));
            out.flush();
        }
    }

    private final StringBuilder sb = new StringBuilder("{");

    private EventLine() {}

    static EventLine of(String event) {
        Instant now = Instant.now();
        double ms = now.getEpochSecond() * 1000.0 + now.getNano() / 1_000_000.0;
        EventLine line = new EventLine();
        line.sb.append(String.format(Locale.ROOT, "\"t_ms\":%.3f", ms));
        return line.str("event", event);
    }

    private EventLine key(String k) {
        sb.append(",\"").append(k).append("\":");
        return this;
    }

    EventLine str(String k, String v) {
        if (v == null) {
            key(k).sb.append("null");
        } else {
            key(k).sb.append('"').append(escape(v)).append('"');
        }
        return this;
    }

    EventLine num(String k, long v) {
        key(k).sb.append(v);
        return this;
    }

    EventLine strings(String k, Collection<String> values) {
        key(k).sb.append('[');
        boolean first = true;
        for (String v : values) {
            if (!first) {
                sb.append(',');
            }
            first = false;
            sb.append('"').append(escape(v)).append('"');
        }
        sb.append(']');
        return this;
    }

    private static String escape(String v) {
        return v.replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
