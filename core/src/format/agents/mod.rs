//! Agents' sessions: the logs coding agents keep as they work (Claude Code,
//! Cline and Roo Code, pi, OpenCode, Crush, Grok CLI, Grok Build, Qwen Code, Kimi Code, Goose, VS Code Copilot Chat,
//! Letta agent files, Amazon Q Developer CLI, OpenHands, OpenAI Agents SDK run states). Each logs one model call's messages as
//! records beside what the agent keeps for itself (ids, links to a parent,
//! usage, UI state), kept as they came; many link records into a chain
//! whose active branch is the conversation (see `chain`).

pub(crate) mod agents_sdk;
pub(crate) mod amazon_q;
pub(crate) mod claude_code;
pub(crate) mod cline;
pub(crate) mod continue_dev;
pub(crate) mod copilot_chat;
pub(crate) mod copilot_journal;
pub(crate) mod crush;
pub(crate) mod cursor;
pub(crate) mod droid;
pub(crate) mod goose;
pub(crate) mod grok_build;
pub(crate) mod grok_cli;
pub(crate) mod kimi_code;
pub(crate) mod letta;
pub(crate) mod opencode;
pub(crate) mod openhands;
pub(crate) mod pi;
pub(crate) mod qwen_code;
pub(crate) mod zed;
