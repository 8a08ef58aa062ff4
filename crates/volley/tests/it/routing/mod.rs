//! Routers: logics, pools and their lifecycle, groups, resizers, and routing
//! from several threads.

mod classic;
mod classic_more;
mod groups;
mod logics;
mod pool_lifecycle;
mod resizer;
mod rotation;
mod typed;
