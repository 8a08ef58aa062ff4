package bench.kontraktor;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

import org.nustaq.kontraktor.Actors;
import org.nustaq.kontraktor.remoting.tcp.TCPConnectable;
import org.nustaq.kontraktor.remoting.tcp.TCPPublisher;

/**
 * The seed's remote "tell sum" and "ask sum" on kontraktor's TCP remoting,
 * two JVMs:
 *
 * <pre>
 * java -jar kontraktor-bench.jar server --port P
 * java -jar kontraktor-bench.jar client --port P --test tell|ask --messages N [--runs R] [--warmup W]
 * </pre>
 *
 * The server prints {@code {"event":"listening","port":P}} once published and
 * serves until its stdin closes. The client prints one JSON line per run on
 * stdout; everything else goes to stderr. Exit codes: 0 ok, 1 a run failed
 * (a count or sum did not add up, a timeout), 2 bad arguments.
 */
public final class Main {

    static final String USAGE = "usage: server --port P | client --port P --test tell|ask"
            + " --messages N [--runs R] [--warmup W]";

    public static void main(String[] argv) {
        try {
            if (argv.length == 0) {
                throw new IllegalArgumentException("no command");
            }
            Map<String, String> args = parse(argv);
            int port = Integer.parseInt(required(args, "port"));
            switch (argv[0]) {
                case "server" -> serve(port);
                case "client" -> Client.run(port, args);
                default -> throw new IllegalArgumentException("unknown command " + argv[0]);
            }
            System.exit(0);
        } catch (IllegalArgumentException e) {
            System.err.println("kontraktor-bench: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
        } catch (Exception e) {
            System.err.println("kontraktor-bench: " + e);
            System.exit(1);
        }
    }

    static Map<String, String> parse(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 1; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("bad argument " + argv[i]);
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        return args;
    }

    static String required(Map<String, String> args, String name) {
        String v = args.get(name);
        if (v == null) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }

    /** Publishes a {@link SumServer} and serves until stdin closes. */
    static void serve(int port) throws IOException {
        SumServer server = Actors.AsActor(SumServer.class);
        new TCPPublisher(server, port).publish(a -> System.err.println("client gone")).await();
        System.out.println("{\"event\":\"listening\",\"port\":" + port + "}");
        System.out.flush();
        while (System.in.read() >= 0) {
            // serve until the driver closes stdin
        }
    }

    /** Connects to the server on 127.0.0.1. */
    static SumServer connect(int port) {
        return (SumServer) new TCPConnectable(SumServer.class, "127.0.0.1", port)
                .connect((res, err) -> {
                    System.err.println("kontraktor-bench: disconnected " + err);
                })
                .await();
    }
}
