package bench.pekko.cluster;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/** The sharded entity: counts what it gets, answers when asked, books its life in {@link Instances}. */
final class Entity {
    private Entity() {}

    static final EntityTypeKey<ShardMsg> KEY = EntityTypeKey.create(ShardMsg.class, "counter");

    static Behavior<ShardMsg> create(String id, Instances instances) {
        return Behaviors.setup(ctx -> {
            AtomicLong counter = instances.started(id);
            return Behaviors.receive(ShardMsg.class)
                    .onMessage(ShardMsg.Add.class, add -> {
                        long n = instances.count(counter);
                        if (add.replyTo() != null) {
                            add.replyTo().tell(new ShardMsg.Reply(add.seq(), n));
                        }
                        return Behaviors.same();
                    })
                    .onSignal(PostStop.class, s -> {
                        instances.stopped(id, counter);
                        return Behaviors.same();
                    })
                    .build();
        });
    }

    /** The singleton: answers every {@code Add} with the port of its node. */
    static Behavior<ShardMsg> singleton(long port) {
        return Behaviors.receive(ShardMsg.class)
                .onMessage(ShardMsg.Add.class, add -> {
                    if (add.replyTo() != null) {
                        add.replyTo().tell(new ShardMsg.Reply(add.seq(), port));
                    }
                    return Behaviors.same();
                })
                .build();
    }
}
