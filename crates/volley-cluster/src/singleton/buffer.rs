//! The proxy's bounded buffer: messages kept while no instance is known,
//! the oldest dropped when full (as Akka's proxy), in order otherwise.

use std::collections::VecDeque;

/// At most `capacity` messages, oldest first.
#[derive(Debug)]
pub(crate) struct Buffer<M> {
    messages: VecDeque<M>,
    capacity: usize,
}

impl<M> Buffer<M> {
    /// An empty buffer holding at most `capacity` (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            messages: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Keeps `message`; returns the oldest one when that made room.
    pub(crate) fn push(&mut self, message: M) -> Option<M> {
        let dropped = if self.messages.len() >= self.capacity {
            self.messages.pop_front()
        } else {
            None
        };
        self.messages.push_back(message);
        dropped
    }

    /// Every message kept, oldest first, leaving the buffer empty.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = M> + '_ {
        self.messages.drain(..)
    }

    /// How many are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.messages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Buffer;

    #[test]
    fn a_full_buffer_drops_the_oldest_and_keeps_the_order() {
        let mut buffer = Buffer::new(3);
        for n in 1..=3 {
            assert_eq!(buffer.push(n), None);
        }
        assert_eq!(buffer.push(4), Some(1));
        assert_eq!(buffer.push(5), Some(2));
        assert_eq!(buffer.len(), 3);
        assert_eq!(buffer.drain().collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(buffer.len(), 0);
    }
}
