//! The integration tests: one binary, one module per subject.

mod completions;
mod convert;
mod errors;
mod roundtrip;
mod stats;
mod tokens;
mod util;
