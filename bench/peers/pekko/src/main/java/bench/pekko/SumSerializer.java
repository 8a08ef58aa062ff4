package bench.pekko;

import java.nio.ByteBuffer;
import org.apache.pekko.serialization.ByteBufferSerializer;
import org.apache.pekko.serialization.SerializerWithStringManifest;

/**
 * The sum test's messages, fixed-width and big-endian: {@link SumPair} as
 * two ints (manifest "P"), {@link SumTally} as two longs ("T") and
 * {@link TakeTally} as nothing ("C"). A {@link ByteBufferSerializer}, so
 * Artery writes straight into its envelope buffer; one-letter manifests,
 * which Artery's manifest compression turns into a table index. Acks
 * ({@code Long}) and answers ({@code Integer}) use Pekko's own primitive
 * serializers.
 */
public final class SumSerializer extends SerializerWithStringManifest implements ByteBufferSerializer {
    /** Any id outside Pekko's reserved 0..40 range, and not PingSerializer's. */
    private static final int IDENTIFIER = 7_700_002;

    private static final String PAIR = "P";
    private static final String TALLY = "T";
    private static final String TAKE = "C";

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    @Override
    public String manifest(Object o) {
        if (o instanceof SumPair) {
            return PAIR;
        }
        if (o instanceof SumTally) {
            return TALLY;
        }
        if (o instanceof TakeTally) {
            return TAKE;
        }
        throw new IllegalArgumentException("SumSerializer cannot serialize " + o.getClass());
    }

    @Override
    public byte[] toBinary(Object o) {
        ByteBuffer buf = ByteBuffer.allocate(16);
        toBinary(o, buf);
        byte[] bytes = new byte[buf.position()];
        buf.flip().get(bytes);
        return bytes;
    }

    @Override
    public void toBinary(Object o, ByteBuffer buf) {
        if (o instanceof SumPair p) {
            buf.putInt(p.a()).putInt(p.b());
        } else if (o instanceof SumTally t) {
            buf.putLong(t.count()).putLong(t.sum());
        } else if (!(o instanceof TakeTally)) {
            throw new IllegalArgumentException("SumSerializer cannot serialize " + o.getClass());
        }
    }

    @Override
    public Object fromBinary(byte[] bytes, String manifest) {
        return fromBinary(ByteBuffer.wrap(bytes), manifest);
    }

    @Override
    public Object fromBinary(ByteBuffer buf, String manifest) {
        return switch (manifest) {
            case PAIR -> new SumPair(buf.getInt(), buf.getInt());
            case TALLY -> new SumTally(buf.getLong(), buf.getLong());
            case TAKE -> TakeTally.INSTANCE;
            default -> throw new IllegalArgumentException("SumSerializer: unknown manifest " + manifest);
        };
    }
}
