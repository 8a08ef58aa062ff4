//! The remote scenarios' messages written and read without serde
//! (`volley_remote::serialization::DirectCodec`): the bytes bincode writes
//! for their serde form, so a node that registers them the serde way reads
//! them the same. `registry()` registers them with `register_direct`.

use volley_remote::serialization::{DirectCodec, DirectError, DirectReader, DirectWriter};

use super::remote_common::{Calc, Ping};

impl DirectCodec for Ping {
    #[inline]
    fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
        out.put(&self.n)?;
        out.put(&self.reply_to)
    }

    #[inline]
    fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
        Ok(Ping {
            n: input.take()?,
            reply_to: input.take()?,
        })
    }
}

impl DirectCodec for Calc {
    #[inline]
    fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
        match self {
            Calc::Add { a, b } => {
                out.variant(0);
                out.put(a)?;
                out.put(b)
            }
            Calc::Sum { a, b, reply_to } => {
                out.variant(1);
                out.put(a)?;
                out.put(b)?;
                out.put(reply_to)
            }
            Calc::Report(to) => {
                out.variant(2);
                out.put(to)
            }
            Calc::AskReport(to) => {
                out.variant(3);
                out.put(to)
            }
        }
    }

    #[inline]
    fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
        Ok(match input.variant()? {
            0 => Calc::Add {
                a: input.take()?,
                b: input.take()?,
            },
            1 => Calc::Sum {
                a: input.take()?,
                b: input.take()?,
                reply_to: input.take()?,
            },
            2 => Calc::Report(input.take()?),
            3 => Calc::AskReport(input.take()?),
            index => return Err(DirectError::unknown_variant::<Calc>(index)),
        })
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use volley_remote::serialization::{BincodeSerializer, DirectSerializer, Serializer};

    use super::*;

    #[test]
    fn calc_add_is_bincodes_bytes() {
        let msg = Calc::Add { a: 3, b: -4 };
        let (mut ours, mut theirs) = (BytesMut::new(), BytesMut::new());
        DirectSerializer.encode(&msg, &mut ours).unwrap();
        BincodeSerializer.encode(&msg, &mut theirs).unwrap();
        assert_eq!(ours, theirs);
        let back: Calc = DirectSerializer.decode(&theirs).unwrap();
        assert!(matches!(back, Calc::Add { a: 3, b: -4 }));
    }
}
