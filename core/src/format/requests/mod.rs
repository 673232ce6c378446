//! Request formats: the bodies a provider's API takes (OpenAI chat, Anthropic
//! messages, Gemini contents, OpenAI Responses, with Codex's rollouts, which
//! log Responses items), and the conversion of any conversation to one
//! request body. Their messages are the API's own; their losses are what
//! the API cannot carry.
//!
//! With them, what wraps a request or comes back from one (their readers
//! and these need each other: a request body may be a captured answer, and
//! an answer's messages are its API's): a single answer of a provider's
//! API (`answer.rs`), its stream saved as events (`stream.rs`), and request
//! bodies inside a batch file's or a proxy capture's envelope (`wrap.rs`).

pub(crate) mod answer;
pub(crate) mod anthropic;
pub(crate) mod bedrock;
pub(crate) mod gemini;
pub(crate) mod openai;
pub(crate) mod request;
pub(crate) mod responses;
pub(crate) mod stream;
pub(crate) mod wrap;
