package bench.pekko.cluster;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializerWithStringManifest;

/**
 * The binary codec of {@link ShardMsg}: {@code Add} is its seq and the
 * reply-to path (empty when none), {@code Reply} two longs.
 */
public final class BenchSerializer extends SerializerWithStringManifest {
    private static final String ADD = "A";
    private static final String REPLY = "R";

    private final ExtendedActorSystem system;
    private volatile ActorRefResolver resolver;

    public BenchSerializer(ExtendedActorSystem system) {
        this.system = system;
    }

    /** Resolved on first use: the typed system is not ready while serializers are made. */
    private ActorRefResolver resolver() {
        ActorRefResolver r = resolver;
        if (r == null) {
            r = ActorRefResolver.get(Adapter.toTyped(system));
            resolver = r;
        }
        return r;
    }

    @Override
    public int identifier() {
        return 9_340_001;
    }

    @Override
    public String manifest(Object o) {
        return o instanceof ShardMsg.Add ? ADD : REPLY;
    }

    @Override
    public byte[] toBinary(Object o) {
        if (o instanceof ShardMsg.Add add) {
            byte[] path = add.replyTo() == null
                    ? new byte[0]
                    : resolver().toSerializationFormat(add.replyTo()).getBytes(StandardCharsets.UTF_8);
            return ByteBuffer.allocate(8 + path.length).putLong(add.seq()).put(path).array();
        }
        if (o instanceof ShardMsg.Reply reply) {
            return ByteBuffer.allocate(16).putLong(reply.seq()).putLong(reply.value()).array();
        }
        throw new IllegalArgumentException("not a bench message: " + o.getClass());
    }

    @Override
    public Object fromBinary(byte[] bytes, String manifest) {
        ByteBuffer in = ByteBuffer.wrap(bytes);
        long seq = in.getLong();
        switch (manifest) {
            case ADD -> {
                if (!in.hasRemaining()) {
                    return new ShardMsg.Add(seq, null);
                }
                String path = new String(bytes, 8, bytes.length - 8, StandardCharsets.UTF_8);
                ActorRef<ShardMsg.Reply> replyTo = resolver().resolveActorRef(path);
                return new ShardMsg.Add(seq, replyTo);
            }
            case REPLY -> {
                return new ShardMsg.Reply(seq, in.getLong());
            }
            default -> throw new IllegalArgumentException("unknown manifest " + manifest);
        }
    }
}
