//! ctxclean cleans LLM conversation transcripts before they go back to a
//! model, and tells you what they cost.
//!
//! The engine is [`ctxclean_core`] (bytes and values in and out), whose
//! modules this crate names again, so `ctxclean::format` is
//! `ctxclean_core::format`. This crate adds what works on the host: finding
//! inputs and reading them in chunks ([`batch`]), writing files safely
//! ([`io`]), agents' session stores on disk ([`stores`]: OpenCode's folder
//! and the agents' SQLite databases), recorded sessions replayed through
//! recipes ([`replay`]) and proxy logs billed ([`bill`]). The `ctxclean`
//! binary (the command line and `serve`) sits on top.
//!
//! ```
//! use ctxclean::format::{read_document, write_document, ReadOptions};
//!
//! let input = br#"{"messages": [{"role": "user", "content": "Hello"}]}"#;
//! let doc = read_document("-", input.to_vec(), &ReadOptions::default()).unwrap();
//! let mut out = Vec::new();
//! write_document(&doc, &mut out).unwrap();
//! assert_eq!(out, input);
//! ```

#![warn(clippy::print_stdout, clippy::print_stderr)]

pub use ctxclean_core::{
    changes, cli, engine, error, fit, format, fuzzing, images, inflight, models, numbers, ops,
    pairs, recipe, report, stats, summary, tokens, transcript, usage, validate, InputError,
};

pub mod batch;
pub mod bill;
pub mod io;
pub mod replay;
pub mod stores;
