//! Dispatchers: the app-runtime kind and the behaviour both kinds share.

mod app_runtime;
mod dispatchers;
