//! Associations with peer nodes: handshake, lifecycle, reconnects, idle
//! links, partitions, quarantine, and system-message delivery.

mod artery;
mod artery_more;
mod closed_port;
mod handshake;
mod handshake_versions;
mod idle;
mod late_incarnation;
mod lifecycle;
mod multi_node;
mod node_comes_back;
mod partition;
mod quarantine;
mod reconnect;
mod remoting;
mod restart_redial;
mod system_messages;
