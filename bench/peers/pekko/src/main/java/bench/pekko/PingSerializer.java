package bench.pekko;

import java.nio.ByteBuffer;
import org.apache.pekko.serialization.ByteBufferSerializer;
import org.apache.pekko.serialization.JSerializer;

/**
 * Compact serializer for {@link RemotePing}: the int payload, big-endian, no
 * manifest. Also a {@link ByteBufferSerializer}, which Artery uses to write
 * straight into its envelope buffer instead of allocating a byte array.
 */
public final class PingSerializer extends JSerializer implements ByteBufferSerializer {
    /** Any id outside Pekko's reserved 0..40 range. */
    private static final int IDENTIFIER = 7_700_001;

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    @Override
    public boolean includeManifest() {
        return false;
    }

    @Override
    public byte[] toBinary(Object o) {
        return ByteBuffer.allocate(4).putInt(((RemotePing) o).n()).array();
    }

    @Override
    public Object fromBinaryJava(byte[] bytes, Class<?> manifest) {
        return new RemotePing(ByteBuffer.wrap(bytes).getInt());
    }

    @Override
    public void toBinary(Object o, ByteBuffer buf) {
        buf.putInt(((RemotePing) o).n());
    }

    @Override
    public Object fromBinary(ByteBuffer buf, String manifest) {
        return new RemotePing(buf.getInt());
    }
}
