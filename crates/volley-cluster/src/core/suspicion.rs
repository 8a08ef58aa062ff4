//! Two repairs to SWIM's suspicion as foca runs it.
//!
//! **Each suspect is told that it is suspected**, directly, once per probe
//! period (Lifeguard's "buddy system", which memberlist implements by
//! sending a suspect message with each ping of a suspect member). In SWIM
//! a suspicion is refuted only by the suspect itself, which raises its
//! incarnation once it learns of the suspicion; a successful probe of a
//! suspect clears nothing. foca spreads the suspicion only by
//! piggybacking it on its packets, each node at most `max_transmissions`
//! times (4 for the size volley configures), to members chosen at random.
//! A member suspected while its packets could not reach it (its
//! connections still shaking hands as it joined, a process starved on a
//! loaded machine) could miss every one of those transmissions: then
//! nobody ever told it, it never refuted, and each node that suspected it
//! declared it down `suspect_to_down_after` later, though it answered
//! every probe meanwhile (found by the process tests on a loaded machine).
//! The notice is a foca `Gossip` packet addressed to the suspected
//! identity, carrying one update: that identity Suspect at the suspected
//! incarnation, what a piggybacked suspicion would have carried. Its
//! header names incarnation 0 for this node, never newer than what the
//! receiver knows of it, so it tells the receiver nothing about this
//! node. A suspect that renewed its identity meanwhile ignores the packet
//! (it is addressed to the old one); a dead one never gets it.
//!
//! **A refuted suspicion's verdict timer is dropped** before foca sees it.
//! foca 2.0 checks, when `ChangeSuspectToDown` fires, that the member
//! still has the suspected incarnation before it declares it down, but
//! sends the member `TurnUndead` (you are down) whether or not the check
//! held. A member that refuted in time thus still heard it was down,
//! renewed its identity and declared its old one down, which the others
//! reported as Unreachable and at once Reachable again: a flap of a live
//! member after every refuted suspicion.

use bytes::BufMut;
use foca::{Codec, Header, Member, Message, State, Timer};

use super::{ClusterCore, RefusedBy};
use crate::codec::ClusterCodec;
use crate::node_id::NodeId;
use crate::outbox::Channel;

impl ClusterCore {
    /// Sends each member foca holds Suspect the news of its suspicion.
    pub(super) fn tell_suspects(&mut self) -> Result<(), RefusedBy> {
        let suspects: Vec<Member<NodeId>> = self
            .foca
            .iter_membership_state()
            .filter(|member| member.state() == State::Suspect)
            .cloned()
            .collect();
        for suspect in suspects {
            let body = self.suspicion_notice(&suspect)?;
            self.outbox.send(suspect.id().clone(), Channel::Swim, &body);
        }
        Ok(())
    }

    /// foca's packet layout: the header, the number of updates (`u16`,
    /// big-endian, as foca writes it), the updates.
    fn suspicion_notice(&self, suspect: &Member<NodeId>) -> Result<Vec<u8>, RefusedBy> {
        let header = Header {
            src: self.foca.identity().clone(),
            src_incarnation: 0,
            dst: suspect.id().clone(),
            message: Message::Gossip,
        };
        let mut body = Vec::new();
        ClusterCodec.encode_header(&header, &mut body)?;
        body.put_u16(1);
        ClusterCodec.encode_member(suspect, &mut body)?;
        Ok(body)
    }

    /// Whether `timer` is the verdict on a suspicion this node no longer
    /// holds: the member is known by that identity at another incarnation
    /// (it refuted). foca would only send it `TurnUndead`.
    pub(super) fn is_refuted_verdict(&self, timer: &Timer<NodeId>) -> bool {
        let Timer::ChangeSuspectToDown {
            member_id,
            incarnation,
            ..
        } = timer
        else {
            return false;
        };
        self.foca
            .iter_membership_state()
            .any(|known| known.id() == member_id && known.incarnation() != *incarnation)
    }
}
