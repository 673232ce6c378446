//! Training sets and framework dumps: conversations kept as data rather than
//! sent (ShareGPT and LLaMA-Factory sets, Hugging Face chat sets, LangChain
//! message dumps), with their images beside the messages (`placeholders`).

pub(crate) mod hf_chat;
pub(crate) mod langchain;
pub(crate) mod placeholders;
pub(crate) mod sharegpt;
