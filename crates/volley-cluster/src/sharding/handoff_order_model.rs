//! A model of one hand-off, explored over every interleaving (design §4):
//! why the marker is needed and that it is enough.
//!
//! Region R1 sent message 1 to the shard's home R2 and will send message
//! 2 after it acks `BeginHandOff`; the coordinator C moves the shard to
//! R3. Each channel is first in, first out (one association, one actor);
//! nothing orders two channels, and R2's `control` and `deliver`
//! children are two channels. The in-process network tests never hit the
//! bad interleaving (the marker, one hop, beats the `HandOff`, two hops),
//! so this is where it is shown.

use std::collections::VecDeque;

/// What reaches R2's `deliver` child from R1.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Deliver {
    Message(u32),
    Marker,
}

/// What C tells a region.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Control {
    BeginHandOff,
    /// Whether R2 must wait for R1's marker.
    HandOff(bool),
    /// The shard lives in R3.
    ShardHome,
}

/// What a region tells C.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Report {
    /// Whether the acking region sent R2 a marker.
    Ack(bool),
    Stopped,
}

#[derive(Clone, Default)]
struct World {
    markers: bool,
    r1_to_r2: VecDeque<Deliver>,
    c_to_r1: VecDeque<Control>,
    c_to_r2: VecDeque<Control>,
    to_c: VecDeque<Report>,
    r1_to_r3: VecDeque<u32>,
    r2_to_r3: VecDeque<u32>,
    r1_buffer: Vec<u32>,
    acks: u8,
    marker_from_r1: bool,
    r2_hosting: bool,
    r2_awaits_marker: bool,
    r2_marker_came: bool,
    r2_buffer: Vec<u32>,
    r2_knows_r3: bool,
    /// What the entity got, wherever it ran.
    received: Vec<u32>,
}

impl World {
    fn start(markers: bool) -> Self {
        World {
            markers,
            r1_to_r2: VecDeque::from([Deliver::Message(1)]),
            c_to_r1: VecDeque::from([Control::BeginHandOff]),
            c_to_r2: VecDeque::from([Control::BeginHandOff]),
            r2_hosting: true,
            ..World::default()
        }
    }

    /// The worlds one step on: each non-empty channel's head delivered.
    fn next(&self) -> Vec<World> {
        let mut next = Vec::new();
        for channel in 0..6 {
            let mut world = self.clone();
            if world.step(channel) {
                next.push(world);
            }
        }
        next
    }

    fn step(&mut self, channel: usize) -> bool {
        match channel {
            0 => self.r1_to_r2.pop_front().map(|d| self.r2_deliver(d)),
            1 => self.c_to_r1.pop_front().map(|c| self.r1_control(c)),
            2 => self.c_to_r2.pop_front().map(|c| self.r2_control(c)),
            3 => self.to_c.pop_front().map(|r| self.coordinator(r)),
            4 => self.r1_to_r3.pop_front().map(|n| self.received.push(n)),
            _ => self.r2_to_r3.pop_front().map(|n| self.received.push(n)),
        }
        .is_some()
    }

    fn r1_control(&mut self, control: Control) {
        match control {
            Control::BeginHandOff => {
                if self.markers {
                    self.r1_to_r2.push_back(Deliver::Marker);
                }
                self.to_c.push_back(Report::Ack(self.markers));
                self.r1_buffer.push(2); // sent after the ack: waits for the home
            }
            Control::ShardHome => self.r1_to_r3.extend(self.r1_buffer.drain(..)),
            Control::HandOff(_) => unreachable!("R1 hosts nothing"),
        }
    }

    fn r2_control(&mut self, control: Control) {
        match control {
            Control::BeginHandOff => self.to_c.push_back(Report::Ack(false)),
            Control::HandOff(await_marker) if await_marker && !self.r2_marker_came => {
                self.r2_awaits_marker = true;
            }
            Control::HandOff(_) => self.r2_hand_off(),
            Control::ShardHome => {
                self.r2_knows_r3 = true;
                self.r2_to_r3.extend(self.r2_buffer.drain(..));
            }
        }
    }

    fn r2_deliver(&mut self, deliver: Deliver) {
        match deliver {
            Deliver::Message(n) if self.r2_hosting => self.received.push(n),
            Deliver::Message(n) if self.r2_knows_r3 => self.r2_to_r3.push_back(n),
            Deliver::Message(n) => self.r2_buffer.push(n),
            Deliver::Marker if self.r2_awaits_marker => self.r2_hand_off(),
            Deliver::Marker => self.r2_marker_came = true,
        }
    }

    fn r2_hand_off(&mut self) {
        self.r2_awaits_marker = false;
        self.r2_hosting = false;
        self.to_c.push_back(Report::Stopped);
    }

    fn coordinator(&mut self, report: Report) {
        match report {
            Report::Ack(marker) => {
                self.acks += 1;
                self.marker_from_r1 |= marker;
                if self.acks == 2 {
                    let await_marker = self.marker_from_r1;
                    self.c_to_r2.push_back(Control::HandOff(await_marker));
                }
            }
            Report::Stopped => {
                self.c_to_r1.push_back(Control::ShardHome);
                self.c_to_r2.push_back(Control::ShardHome);
            }
        }
    }
}

/// What the entity received in every interleaving that ran to its end.
fn every_ending(markers: bool) -> Vec<Vec<u32>> {
    let mut endings = Vec::new();
    let mut open = vec![World::start(markers)];
    while let Some(world) = open.pop() {
        let next = world.next();
        if next.is_empty() {
            endings.push(world.received);
        }
        open.extend(next);
    }
    endings
}

#[test]
fn without_the_marker_some_interleaving_reorders() {
    let endings = every_ending(false);
    assert!(endings.iter().all(|got| got.len() == 2), "none lost");
    assert!(endings.contains(&vec![2, 1]), "a reordering exists");
}

#[test]
fn with_the_marker_every_interleaving_keeps_the_order() {
    let endings = every_ending(true);
    // Each of the six channels may go next: many orders, not one.
    assert!(endings.len() > 100, "{} interleavings", endings.len());
    for got in endings {
        assert_eq!(got, vec![1, 2]);
    }
}
