//! The integration tests: one binary, one module per subject.

mod agents;
mod batch;
mod chains;
mod compact;
mod completions;
mod conversion;
mod convert;
mod costs;
mod details;
mod errors;
mod filter;
mod formats;
mod malformed;
mod output;
mod properties;
mod real;
mod redetect;
mod roundtrip;
mod rows;
mod stats;
mod summarize;
mod to;
mod tokens;
mod trim;
mod util;
mod validate;
