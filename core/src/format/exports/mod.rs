//! Chat exports: what chat apps let a user download (ChatGPT, Claude.ai,
//! AI Studio, Grok, LibreChat, Open WebUI, GitHub Copilot CLI, branched
//! chat exports). Messages
//! sit in each app's own tree or list with the app's metadata, which is
//! kept as it came; most cannot take new messages.

pub(crate) mod apps;
pub(crate) mod branched;
pub(crate) mod chatgpt;
pub(crate) mod librechat;
pub(crate) mod open_webui;
