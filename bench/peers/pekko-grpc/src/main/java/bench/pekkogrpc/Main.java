package bench.pekkogrpc;

import java.io.InputStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.http.javadsl.Http;

import helloworld.Greeter;
import helloworld.GreeterHandlerFactory;
import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;

/**
 * grpc_bench's complex_proto Greeter on Pekko gRPC, as its akka entry
 * serves it (the reply echoes the request), on 127.0.0.1:PORT. Prints
 * "ready" once bound and stops when its stdin closes, like the bench's
 * other servers.
 */
public final class Main {
    private Main() {}

    /** The service: echo the request's Hello back. */
    static final class Echo implements Greeter {
        @Override
        public CompletionStage<HelloReply> sayHello(HelloRequest in) {
            return CompletableFuture.completedFuture(
                HelloReply.newBuilder().setResponse(in.getRequest()).build());
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: pekko-grpc-bench PORT");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        ActorSystem system = ActorSystem.create("greeter");
        Http.get(system)
            .newServerAt("127.0.0.1", port)
            .bind(GreeterHandlerFactory.create(new Echo(), system))
            .toCompletableFuture()
            .get();
        System.out.println("ready");
        System.out.flush();
        InputStream stdin = System.in;
        byte[] buffer = new byte[256];
        while (stdin.read(buffer) >= 0) {
            // Nothing is expected on stdin; its end is the signal to stop.
        }
        system.terminate();
        System.exit(0);
    }
}
