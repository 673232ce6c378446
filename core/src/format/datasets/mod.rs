//! Training sets and framework dumps: conversations kept as data rather than
//! sent (ShareGPT and LLaMA-Factory sets, Hugging Face chat sets, LangChain
//! message dumps). Their images beside the messages are read by
//! `format/placeholders.rs`, which OpenAI bodies share.

pub(crate) mod hf_chat;
pub(crate) mod langchain;
pub(crate) mod sharegpt;
