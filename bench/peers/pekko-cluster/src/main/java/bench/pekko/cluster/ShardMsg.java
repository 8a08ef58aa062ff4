package bench.pekko.cluster;

import org.apache.pekko.actor.typed.ActorRef;

/**
 * The messages of {@code sharding-node}: what an entity or the singleton
 * gets, and what it answers. Bound to {@link BenchSerializer} (Pekko turns
 * Java serialization off, and a compact binary codec is what a tuned
 * deployment uses).
 */
sealed interface ShardMsg permits ShardMsg.Add, ShardMsg.Reply {
    /**
     * One message to an entity (or the singleton): counted by the
     * receiver; answered with a {@link Reply} when {@code replyTo} is set
     * (the tell row's acknowledgements, every ask).
     */
    record Add(long seq, ActorRef<Reply> replyTo) implements ShardMsg {}

    /**
     * The answer to {@link Add}: its {@code seq}, and {@code value} (an
     * entity: how many messages this instance has counted; the singleton:
     * the port of the node it runs on).
     */
    record Reply(long seq, long value) implements ShardMsg {}
}
