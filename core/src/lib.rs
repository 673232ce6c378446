//! ctxclean's engine: transcripts in, cleaned transcripts and their token
//! reports out. Bytes and values in, bytes and values out: the command
//! line, the proxy and the Python package are front ends over it.
//!
//! It does no terminal I/O, serves nothing and finds no inputs. What it
//! reads or asks of the host is what a recipe names: a recipe file, a
//! `--prices` table, a summarizer's prompt file, its cache folder and its
//! server (Ollama or an OpenAI-compatible API), a Hugging Face
//! `tokenizer.json` (feature `hf`), and the API key's environment variable
//! (see ARCHITECTURE.md, "Crates and dependencies").
//!
//! - [`transcript`]: the lossless model every format reads into;
//! - [`format`]: layout and dialect detection, readers and writers;
//! - [`tokens`]: exact token accounting (tiktoken encodings, or `approx`);
//! - [`pairs`]: which tool result answers which call (the invariant);
//! - [`ops`]: the operations, composed in a [`ops::Pipeline`];
//! - [`summary`]: the engines behind `summarize` (offline, Ollama, OpenAI)
//!   and their cache;
//! - [`validate`]: would a provider's API accept a conversation;
//! - [`engine`]: the one call every front end shares ([`engine::Engine`]):
//!   an input in; the cleaned input, its reports and losses out;
//! - [`inflight`]: a request in flight, and the cache-stable holds;
//! - [`recipe`] and [`cli`]: recipes (the command line's words) into
//!   engines;
//! - [`stats`] and [`report`]: accounting and its renderers; [`usage`]: the
//!   usage logs recorded themselves.
//!
//! ```
//! use ctxclean_core::format::{read_document, write_document, ReadOptions};
//! use ctxclean_core::tokens::{Encoding, Tokenizer};
//!
//! let input = br#"{"messages": [{"role": "user", "content": "Hello, world!"}]}"#;
//! let doc = read_document("-", input.to_vec(), &ReadOptions::default()).unwrap();
//! let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
//! assert_eq!(tok.count_conversation(&doc.conversations[0]), 3 + 1 + 4 + 3);
//!
//! let mut out = Vec::new();
//! write_document(&doc, &mut out).unwrap();
//! assert_eq!(out, input); // unchanged input comes back byte for byte
//! ```

#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod changes;
pub mod cli;
pub mod engine;
pub mod error;
pub mod fit;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod images;
pub mod inflight;
#[doc(hidden)]
pub mod json;
mod memo;
pub mod models;
pub mod numbers;
pub mod ops;
pub mod pairs;
pub mod recipe;
pub mod report;
pub mod stats;
pub mod summary;
#[cfg(test)]
mod testing;
pub mod tokens;
pub mod transcript;
pub mod usage;
pub mod validate;
mod vocab;

pub use error::InputError;
