//! Remote deployment: spawning on a peer, remote routees, and what stays
//! behind.

mod remote_deploy;
mod remote_deploy_more;
