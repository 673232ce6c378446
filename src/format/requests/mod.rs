//! Request formats: the bodies a provider's API takes (OpenAI chat, Anthropic
//! messages, Gemini contents, OpenAI Responses, with Codex's rollouts, which
//! log Responses items), and the conversion of any conversation to one
//! request body. Their messages are the API's own; their losses are what
//! the API cannot carry.

pub(crate) mod anthropic;
pub(crate) mod bedrock;
pub(crate) mod gemini;
pub(crate) mod openai;
pub(crate) mod request;
pub(crate) mod responses;
