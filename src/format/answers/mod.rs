//! Envelopes and answers: what wraps a request or comes back from one. A
//! single answer of a provider's API, its stream saved as events, and
//! request bodies inside a batch file's or a proxy capture's envelope.

pub(crate) mod answer;
pub(crate) mod stream;
pub(crate) mod wrap;
