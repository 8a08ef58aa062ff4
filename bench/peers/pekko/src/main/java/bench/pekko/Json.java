package bench.pekko;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/** Writes flat JSON objects, one per line, to the process's real stdout. */
final class Json {
    private static PrintStream out;

    private final StringBuilder sb = new StringBuilder("{");

    private Json() {}

    static void init() {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    }

    static Json object() {
        return new Json();
    }

    private Json key(String k) {
        if (sb.length() > 1) {
            sb.append(',');
        }
        sb.append('"').append(k).append("\":");
        return this;
    }

    Json str(String k, String v) {
        key(k).sb.append('"').append(v.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        return this;
    }

    Json bool(String k, boolean v) {
        key(k).sb.append(v);
        return this;
    }

    /** A number with one decimal, or {@code null}. */
    Json millis(String k, Double v) {
        if (v == null) {
            key(k).sb.append("null");
        } else {
            key(k).sb.append(String.format(Locale.ROOT, "%.1f", v));
        }
        return this;
    }

    /** A line that is not a result (the failover node's address), on the real stdout. */
    static void line(String text) {
        out.println(text);
        out.flush();
    }

    Json num(String k, long v) {
        key(k).sb.append(v);
        return this;
    }

    Json num(String k, double v) {
        key(k).sb.append(String.format(Locale.ROOT, "%.3f", v));
        return this;
    }

    void emit() {
        out.println(sb.append('}'));
        out.flush();
    }
}
