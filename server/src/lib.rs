//! The local server: every function's router merged on one port, the local key file, and the
//! offline command-line tools. `main.rs` only parses the command line.

pub mod admin;
pub mod admin_cli;
pub mod agent;
pub mod chunk_watch;
pub mod cli;
pub mod keyfile;
pub mod listener;
pub mod metrics_listener;
pub mod offline;
pub mod proxies;
pub mod serve;
pub mod store_cli;
pub mod unread_body;
