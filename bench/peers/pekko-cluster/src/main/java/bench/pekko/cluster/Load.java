package bench.pekko.cluster;

import java.time.Duration;
import java.util.BitSet;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;

/**
 * One row's load from this node, then a {@code row} line: {@code total}
 * messages to entities, at most {@code window} answers outstanding. A tell
 * row asks for an acknowledgement on every {@code ackEvery}-th message
 * (and the last), the flow control that keeps Artery's outbound queue from
 * overflowing; an ask row asks every message with {@code EntityRef.ask}.
 * Message {@code seq} goes to {@code prefix + seq % entities}, or to
 * {@code prefix + seq} (a new id each) when {@code entities} is 0.
 * {@link Stop} ends it early (the load that runs while members join and leave).
 */
final class Load extends AbstractBehavior<Object> {
    /** What a row sends. */
    record Spec(String row, long total, int window, int ackEvery, int entities, String prefix, boolean ask) {
        /** {@code run ROW TOTAL WINDOW ACK_EVERY ENTITIES PREFIX ask|tell}. */
        static Spec parse(String command) {
            String[] w = command.split("\\s+");
            if (w.length != 8) {
                throw new IllegalArgumentException("run needs 7 arguments: " + command);
            }
            return new Spec(w[1], Long.parseLong(w[2]), Integer.parseInt(w[3]),
                    Integer.parseInt(w[4]), Integer.parseInt(w[5]), w[6], w[7].equals("ask"));
        }
    }

    /** Ends the load early: nothing more is sent, the answers outstanding are awaited. */
    enum Stop { STOP }

    /** An ask's outcome, piped to the load. */
    private record AskDone(long seq, ShardMsg.Reply reply, Throwable failure) {}

    static final Duration ASK_TIMEOUT = Duration.ofSeconds(10);

    private Spec spec;
    private final EventLine.Sink out;
    private final ClusterSharding sharding;
    private final EntityRef<ShardMsg>[] refs;
    private final BitSet answered = new BitSet();
    private final ActorRef<ShardMsg.Reply> self;
    private final long startNs = System.nanoTime();
    private long sent;
    private long outstanding;
    private long replies;
    private long duplicateReplies;
    private long failures;

    static Behavior<Object> create(Spec spec, EventLine.Sink out) {
        return Behaviors.setup(ctx -> new Load(ctx, spec, out).pump());
    }

    @SuppressWarnings("unchecked")
    private Load(ActorContext<Object> ctx, Spec spec, EventLine.Sink out) {
        super(ctx);
        this.spec = spec;
        this.out = out;
        this.sharding = ClusterSharding.get(ctx.getSystem());
        this.refs = new EntityRef[spec.entities()];
        this.self = ctx.getSelf().narrow();
    }

    /** The entity of message {@code seq}; refs of a fixed set are made once, as a caller would keep them. */
    private EntityRef<ShardMsg> refFor(long seq) {
        if (spec.entities() == 0) {
            return sharding.entityRefFor(Entity.KEY, spec.prefix() + seq);
        }
        int i = (int) (seq % spec.entities());
        if (refs[i] == null) {
            refs[i] = sharding.entityRefFor(Entity.KEY, spec.prefix() + i);
        }
        return refs[i];
    }

    private Behavior<Object> pump() {
        while (sent < spec.total() && outstanding < spec.window()) {
            long seq = sent++;
            EntityRef<ShardMsg> ref = refFor(seq);
            if (spec.ask()) {
                outstanding++;
                getContext().pipeToSelf(ref.<ShardMsg.Reply>ask(r -> new ShardMsg.Add(seq, r), ASK_TIMEOUT),
                        (reply, failure) -> new AskDone(seq, reply, failure));
            } else if ((seq + 1) % spec.ackEvery() == 0 || seq == spec.total() - 1) {
                outstanding++;
                ref.tell(new ShardMsg.Add(seq, self));
            } else {
                ref.tell(new ShardMsg.Add(seq, null));
            }
        }
        if (sent == spec.total() && outstanding == 0) {
            return finish();
        }
        return this;
    }

    @Override
    public Receive<Object> createReceive() {
        return newReceiveBuilder()
                .onMessage(ShardMsg.Reply.class, r -> answered(r.seq()))
                .onMessageEquals(Stop.STOP, () -> {
                    spec = new Spec(spec.row(), sent, spec.window(), spec.ackEvery(), spec.entities(),
                            spec.prefix(), spec.ask());
                    return pump();
                })
                .onMessage(AskDone.class, d -> {
                    if (d.failure() != null) {
                        failures++;
                        outstanding--;
                        return pump();
                    }
                    return answered(d.seq());
                })
                .build();
    }

    private Behavior<Object> answered(long seq) {
        outstanding--;
        if (answered.get((int) seq)) {
            duplicateReplies++;
        } else {
            answered.set((int) seq);
            replies++;
        }
        return pump();
    }

    private Behavior<Object> finish() {
        long ns = System.nanoTime() - startNs;
        out.emit(EventLine.of("row")
                .str("row", spec.row())
                .num("sent", sent)
                .num("replies", replies)
                .num("duplicate_replies", duplicateReplies)
                .num("failures", failures)
                .num("window", spec.window())
                .num("ack_every", spec.ackEvery())
                .num("elapsed_us", ns / 1_000));
        return Behaviors.stopped();
    }
}
