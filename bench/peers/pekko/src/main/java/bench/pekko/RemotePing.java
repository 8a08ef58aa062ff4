package bench.pekko;

/** The remote ping-pong payload; serialized by {@link PingSerializer} as 4 bytes. */
public record RemotePing(int n) {}
