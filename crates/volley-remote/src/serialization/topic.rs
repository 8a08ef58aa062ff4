//! A topic's commands on the wire: only a publish and a copy relayed
//! between instances cross nodes (the rest hold local refs), as bincode of
//! a two-variant enum, so that topics span a cluster
//! (`Registry::register_topic`).

use std::marker::PhantomData;

use bytes::BytesMut;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use volley::TopicCommand;

use super::{
    BincodeSerializer, BytesMutWriter, SerializeError, Serializer, SerializerId, BINCODE_CONFIG,
};

/// A topic command as it travels, borrowed for encoding.
#[derive(Serialize)]
enum WireRef<'a, M> {
    Publish(&'a M),
    Relayed(&'a M),
}

/// A topic command as it travels, owned for decoding (the same bytes as
/// [`WireRef`]: serde writes a reference as its value).
#[derive(Serialize, Deserialize)]
#[serde(bound(serialize = "M: Serialize", deserialize = "M: DeserializeOwned"))]
enum Wire<M> {
    Publish(M),
    Relayed(M),
}

/// The serializer of [`TopicCommand`]s: bincode (id 2) of the message and
/// whether it was published or relayed. Other commands are refused
/// ([`SerializeError::Encode`]).
pub struct TopicSerializer<M>(PhantomData<fn(M)>);

impl<M> Default for TopicSerializer<M> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<M> Serializer<TopicCommand<M>> for TopicSerializer<M>
where
    M: Serialize + DeserializeOwned + Clone + Send + 'static,
{
    fn id(&self) -> SerializerId {
        SerializerId::BINCODE
    }

    fn encode(&self, value: &TopicCommand<M>, buf: &mut BytesMut) -> Result<(), SerializeError> {
        let wire = match value.remote_parts() {
            Some((false, msg)) => WireRef::Publish(msg),
            Some((true, msg)) => WireRef::Relayed(msg),
            None => {
                return Err(SerializeError::Encode {
                    serializer: SerializerId::BINCODE,
                    source: "only a topic's publish and relayed copies cross nodes".into(),
                })
            }
        };
        bincode::serde::encode_into_writer(&wire, BytesMutWriter(buf), BINCODE_CONFIG).map_err(
            |e| SerializeError::Encode {
                serializer: SerializerId::BINCODE,
                source: Box::new(e),
            },
        )
    }

    fn decode(&self, bytes: &[u8]) -> Result<TopicCommand<M>, SerializeError> {
        let wire: Wire<M> = BincodeSerializer.decode(bytes)?;
        Ok(match wire {
            Wire::Publish(msg) => TopicCommand::from_remote_parts(false, msg),
            Wire::Relayed(msg) => TopicCommand::from_remote_parts(true, msg),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(command: &TopicCommand<String>) -> TopicCommand<String> {
        let serializer = TopicSerializer::<String>::default();
        let mut buf = BytesMut::new();
        serializer.encode(command, &mut buf).expect("encodes");
        serializer.decode(&buf).expect("decodes")
    }

    #[test]
    fn publishes_and_relayed_copies_round_trip() {
        let published = round_trip(&TopicCommand::Publish("a".to_owned()));
        assert_eq!(published.remote_parts(), Some((false, &"a".to_owned())));
        let relayed = round_trip(&TopicCommand::from_remote_parts(true, "b".to_owned()));
        assert_eq!(relayed.remote_parts(), Some((true, &"b".to_owned())));
    }
}
