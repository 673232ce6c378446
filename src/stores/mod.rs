//! Agents' session stores on disk, each session put together as the JSON
//! its agent's format reads (in `ctxclean_core::format`): OpenCode's
//! storage folder, and the agents' SQLite databases (feature `databases`,
//! which bundles SQLite: the only crate that builds it).

#[cfg(feature = "databases")]
pub(crate) mod amazon_q;
#[cfg(feature = "databases")]
pub(crate) mod crush;
#[cfg(feature = "databases")]
pub(crate) mod cursor;
#[cfg(feature = "databases")]
pub(crate) mod database;
#[cfg(feature = "databases")]
pub(crate) mod goose;
#[cfg(feature = "databases")]
pub(crate) mod grok_cli;
pub(crate) mod opencode;
#[cfg(feature = "databases")]
pub(crate) mod rows;
#[cfg(feature = "databases")]
pub(crate) mod zed;
