//! The command line: clap definitions only, no logic. In the library so
//! that every front end reads a recipe's steps as the command line does
//! ([`crate::recipe`]).

// Documented by their help text (`ctxclean COMMAND --help`); a doc comment
// on an argument struct would change it.
#![allow(missing_docs)]

use std::path::PathBuf;

use crate::format::Format;
use crate::tokens::Encoding;
use crate::transcript::Role;
use clap::builder::TypedValueParser as _;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Clean LLM conversation transcripts before they go back to a model, and
/// see what they cost.
#[derive(Parser, Debug)]
#[command(name = "ctxclean", version, propagate_version = true)]
#[command(after_help = "\
Inputs are JSON or JSONL transcripts: files, directories (walked for *.json
and *.jsonl) or standard input. Transforming commands write the transcript to
standard output (or -o) in the shape it came in, and a one-line summary to
standard error; with several inputs, to --out-dir or back with --in-place
(standard output takes several inputs only when they are JSONL; the sessions
of an agent's database are JSON documents, and several go to --out-dir).

A JSONL file with one conversation per line is streamed: read, processed and
written chunk by chunk in bounded memory, whatever its size. A JSON document,
or a JSONL log whose lines are the messages of one conversation (Claude Code,
Codex), is held whole.

Chains: join transforming commands with `then` to run them in one pass,
e.g. `ctxclean filter --previous-cycles then compact-tools then trim
--max-tokens 8000 logs/ --out-dir clean/`; input, output, format, tokenizer
and report flags may stand in any step and apply to the whole run. A chain
may end with `then stats`. `ctxclean apply RECIPE` runs a chain saved in a
TOML file (`--save-recipe FILE` writes one).

Exit codes: 0 success; 1 bad input, an I/O error, an invalid transcript
(validate) or a failed file (--keep-going); 2 usage error.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// Count tokens: per conversation, by role, tool and image.
    ///
    /// Prints a table per conversation (or a JSON report with --json): messages
    /// and tokens by role, tool calls, tool results by tool, images, the
    /// heaviest messages, and what the next model call needs (a vision model
    /// when images are present, a large context past --large-context tokens).
    ///
    /// Tokens follow OpenAI's recipe: a message costs 3, plus its role, text,
    /// name (plus 1), each tool call (3, name, arguments), tool_call_id, and
    /// its images; a conversation costs its messages plus 3. An image costs
    /// what its provider charges for its real size, read from its header
    /// (OpenAI's 512-px tiles, Anthropic's pixels / 750, Gemini's 768-px
    /// tiles): the provider of the input's format, or of --model; one whose
    /// size cannot be read costs the provider's most and is marked
    /// estimated. Opaque payloads
    /// (encrypted reasoning, thinking signatures, base64 files) are never
    /// tokens: they are reported in bytes (`opaque_bytes`). `approx` is
    /// LangChain's estimate. Over many files, a total row ends the report;
    /// --by file makes one table per file. JSONL with a conversation per line
    /// is streamed in bounded memory; a single conversation is held whole.
    #[command(after_help = "Examples:
  ctxclean stats --per-message --tokenizer cl100k_base chat.json
  ctxclean stats --by file --json logs/ > tokens.json
  ctxclean stats --jsonl -q logs/ > rows.jsonl")]
    Stats(StatsArgs),
    /// Drop what the next model call does not need.
    ///
    /// Every rule is a flag; several combine in one run, applied in the order
    /// listed here; at least one rule is needed (with none, a usage error).
    /// Tool pairs stay valid after every rule: when a call goes its results go
    /// too, and the reverse (except the active cycle at the very end). Each
    /// removal or change is listed in --report with its rule as the reason.
    /// JSONL with a conversation per line is streamed; a single conversation
    /// is held whole.
    #[command(after_help = "Examples:
  ctxclean filter --previous-cycles chat.json > next-turn.json
  ctxclean filter --agent pm --chat-id chat-1 memory.jsonl
  ctxclean filter --supersede write_file=path --dedupe-tool-results logs/ --out-dir clean/")]
    Filter(FilterArgs),
    /// Replace heavy tool results with faithful, computed metadata.
    ///
    /// Old, large results become exact descriptions instead of paraphrases:
    /// `[Tool: 247 rows | {first row}]` for JSON rows, `[Tool: error | first
    /// line]`, `[Tool: object {keys} | N chars]`, `[Tool: N lines, M chars |
    /// preview…]`, `[image: MEDIA_TYPE, N bytes]`. JSON is found even when
    /// HTML-escaped, double-encoded or in a code fence. A result is replaced,
    /// never removed; the last --keep-last results are never touched. A
    /// second run changes nothing: a description is not described again,
    /// nor a cut string cut again. JSONL with a conversation per line is
    /// streamed; a single conversation is held whole.
    #[command(after_help = "Examples:
  ctxclean compact-tools session.json
  ctxclean compact-tools --max-total-tokens 20000 --exclude-tools read_file chat.json
  ctxclean compact-tools --keep-last 5 --report report.json logs/ --out-dir clean/")]
    CompactTools(CompactArgs),
    /// Fit a token budget, keeping every tool call with its results.
    ///
    /// LangChain's trim_messages semantics, fixed: messages are kept or
    /// dropped in units (an assistant message with tool calls and all the
    /// results that answer it), so a result never loses its call. With the
    /// default strategy `last`, the first system message is kept (unless
    /// --no-system) and counts against the budget; --end-on drops units from
    /// the end; the longest run of units at the end that fits is kept;
    /// --start-on drops units from its front. Kept even over budget, and
    /// flagged: a system message that alone exceeds the budget, and the
    /// active tool cycle at the very end. After `trim --max-tokens N`, `stats`
    /// shows at most N tokens otherwise.
    ///
    /// In formats whose API wants the user first (Anthropic, Claude Code,
    /// Claude.ai, Cline, Gemini, AI Studio), a kept tail that does not open
    /// with the user gets a one-line user message in front, `[Earlier
    /// conversation trimmed: N messages, M tokens]`, counted in the budget
    /// (--no-placeholder drops to a real user message instead). A
    /// conversation never comes out empty unless asked (--max-messages 0):
    /// when nothing fits, the last unit is kept, flagged over budget and
    /// told on stderr. Each conversation is held whole.
    #[command(after_help = "Examples:
  ctxclean trim --max-tokens 8000 --report-jsonl rows.jsonl data.jsonl -o clean.jsonl
  ctxclean trim --max-turns 10 --in-place --backup .bak logs/
  ctxclean filter --previous-cycles then trim --max-tokens 8000 chat.json")]
    Trim(TrimArgs),
    /// Past a token threshold, replace older turns with a summary.
    ///
    /// At or under --threshold tokens a conversation passes through unchanged.
    /// Over it, the output is the first system message, one summary message,
    /// and the last --keep messages verbatim (widened so no tool call loses
    /// its results; halved down to --min-keep when nothing older is left).
    /// Later system messages before that window are dropped. Tool results in
    /// the older part become `[Tool: …]` lines (compact-tools' descriptions)
    /// and are listed in the summary message under `[Tool calls from earlier
    /// in conversation]`.
    ///
    /// Engines: `extractive` (default) is offline and deterministic: one line
    /// per older turn with what the user asked, what was answered or decided,
    /// and the paths, URLs, names and numbers they mentioned. `ollama` posts
    /// to {url}/api/chat, `openai` to {url}/chat/completions (OpenAI, vLLM,
    /// llama.cpp, LM Studio, …) with a bearer key from --api-key-env.
    ///
    /// When the engine fails (refused, timeout, HTTP error, empty or malformed
    /// answer; timeouts and 5xx are retried twice), --on-failure decides: by
    /// default the older messages are truncated instead with a note saying
    /// how many, the reason is printed as a warning and the report records
    /// it (`fallback`, never in the conversation the model reads), and the exit
    /// code is still 0; with --in-place and no --backup the conversation is
    /// kept as it was instead. Each conversation is held whole.
    #[command(after_help = "Examples:
  ctxclean summarize --threshold 50000 session.json
  ctxclean summarize --engine ollama --engine-model llama3.2 --on-failure keep chat.json
  ctxclean summarize --engine openai --cache ~/.cache/ctxclean logs/ --out-dir short/")]
    Summarize(SummarizeArgs),
    /// Check that each conversation would be accepted by a provider's API.
    ///
    /// Every tool result answers an earlier call and comes right after it,
    /// every call is answered (except the active cycle at the very end), call
    /// ids are unique, roles are allowed and in the order the provider
    /// requires (Anthropic, Gemini: system instructions only at the start,
    /// then the user first), content is not empty where the provider rejects
    /// it, and parts are of kinds the role may carry. Prints each problem as
    /// `FILE:conversation N:message M: what is wrong`; exit 0 when every
    /// conversation is valid, 1 when one is not.
    #[command(after_help = "Examples:
  ctxclean validate chat.json
  ctxclean validate --provider anthropic --json logs/
  ctxclean trim --max-tokens 8000 chat.json | ctxclean validate")]
    Validate(ValidateArgs),
    /// Write transcripts in another format (or the same one, unchanged).
    ///
    /// With no --to, the output is the input, value for value and key for key;
    /// an unchanged JSON document or JSONL line comes back byte for byte.
    ///
    /// Targets are of two kinds. Request formats — openai, anthropic,
    /// responses, gemini, langchain, sharegpt, hf-chat — are what an API or a
    /// library takes as it stands: one request body per conversation (a JSON
    /// document for one, JSONL for several), tools, tool choice, system
    /// prompt and output limit converted too, and a tool call's parallel
    /// siblings kept in one assistant turn; anthropic and gemini take the
    /// user's turn first, so a conversation (or a saved answer) the
    /// assistant opens gets a user message "[Start of conversation]" in
    /// front, said in a note. Log and export formats —
    /// claude-code, codex, cline, droid, cursor, cursor-ide, zed, continue, amazon-q,
    /// grok-build,
    /// open-webui, librechat, branched, openhands, chatgpt, claude-ai, grok,
    /// aistudio, copilot — are written only from input of that same format;
    /// --to one of them from another format is a usage error. A loss (thinking in
    /// OpenAI, a built-in tool, a rejected completion) is never silent: it
    /// is a change in the report and a count on standard error, and
    /// --strict turns it into a failure.
    #[command(after_help = "Examples:
  ctxclean convert --to anthropic chat.json > request.json
  ctxclean convert --to openai --strict session.jsonl
  ctxclean convert --from sharegpt data.jsonl -o data.clean.jsonl")]
    Convert(ConvertArgs),
    /// Run a saved chain of steps (a TOML recipe) over the inputs.
    ///
    /// A recipe holds `[[step]]` tables whose keys are the step's flags
    /// without their dashes: `op = "trim"` and `max-tokens = 8000` is `trim
    /// --max-tokens 8000`; a flag without a value is `true`; a repeated flag
    /// is a list. Steps run in order in one pass, exactly as the same chain
    /// typed with `then`. Inputs and output flags given here apply to the
    /// whole run. `--save-recipe FILE` on any transforming command or chain
    /// writes one; --print-chain shows the equivalent command line.
    #[command(after_help = "Examples:
  ctxclean apply examples/clean-agent-logs.toml logs/ --out-dir clean/
  ctxclean apply --print-chain examples/clean-agent-logs.toml
  ctxclean apply my-recipe.toml -q --in-place --backup .bak chat.json")]
    Apply(ApplyArgs),
    /// Clean every request in flight: a proxy in front of an OpenAI-,
    /// Anthropic-, Gemini- or Ollama-compatible server.
    ///
    /// Listens on --listen (loopback by default) and forwards every request
    /// to --upstream. The bodies of POST /v1/chat/completions (OpenAI),
    /// /v1/messages and /v1/messages/count_tokens (Anthropic), /v1/responses
    /// (OpenAI Responses), /api/chat (Ollama) and Gemini's
    /// /v1beta/models/MODEL:generateContent and :streamGenerateContent go
    /// through the recipe
    /// (--recipe FILE, or a chain after `--`) before they are forwarded;
    /// every other request, and every answer, is forwarded untouched,
    /// streamed answers byte for byte as they arrive. The rest of a body
    /// (model, tools, parameters, `stream`) is left as it came.
    ///
    /// A request is never made worse: a body the recipe would make invalid
    /// for its provider (a tool result without its call, …), or that a
    /// failed summarizer would cut, goes on as it came, said in the log. A
    /// body that cannot be read is answered 400 (413 past --max-body) in the
    /// provider's own error shape; an upstream that cannot be reached, 502
    /// (504 past --timeout). A conversation that comes back longer goes
    /// on as it went last time, the new messages appended, so prompt caches
    /// keep hitting, until it passes the budget of the recipe's `trim` or
    /// cleaning it again has paid for itself: the reads of what the recipe
    /// would take out, added up request by request, reach the cache write
    /// cleaning again costs (rent or buy; --cache-horizon N for a fixed
    /// horizon); `trim` then cuts a step at once (--step, half the budget
    /// by default here).
    ///
    /// One JSON line per request goes to standard error (or --log): route,
    /// model, tokens before and after, messages removed, whether the body was
    /// rewritten and why not, the upstream's status, the milliseconds
    /// ctxclean added. Never a body, never a credential. GET /healthz and
    /// GET /metrics (Prometheus) are answered by the proxy itself.
    #[command(
        after_help = "Point the client at it: ANTHROPIC_BASE_URL=http://127.0.0.1:8787 (Claude
Code, the Anthropic SDK), OPENAI_BASE_URL=http://127.0.0.1:8787/v1 (the OpenAI
SDK, Codex, LangChain's ChatOpenAI(base_url=...)), or the Ollama URL of Open
WebUI set to http://127.0.0.1:8787.

Examples:
  ctxclean serve --upstream https://api.anthropic.com -- filter --previous-cycles then trim --max-tokens 100000
  ctxclean serve --upstream http://localhost:11434 --recipe examples/clean-agent-logs.toml
  ctxclean serve --upstream https://api.openai.com --dry-run -- trim --max-tokens 50000"
    )]
    Serve(ServeArgs),
    /// Replay recorded sessions through recipes, call by call, as `serve`
    /// would have cleaned them: tokens, dollars with caching, and the
    /// evidence the model used next still kept.
    ///
    /// At each model call of a session (each point where the log shows the
    /// model answering), the request the agent sent is rebuilt (the
    /// conversation up to it, in its provider's request format) and
    /// cleaned by each recipe through the proxy's own in-flight call: the
    /// same holds, step cuts and cache-price rule. Each call is priced at
    /// the model's prices with caching (the prefix shared with the previous
    /// call's body read from the cache, the rest written, the output as
    /// logged) and checked: is the body valid for its provider, and does it
    /// still hold the evidence, the distinctive strings (paths,
    /// identifiers, URLs, numbers of 3+ digits, quoted strings) of the
    /// model's actual next output that the context held and what no recipe
    /// removes (the tool definitions, the system prompt, the latest user
    /// message) did not, matched as the body escapes them. Recall is the
    /// share kept. It measures presence, not understanding.
    ///
    /// Beside the recipes given, four baselines always run, each its
    /// method applied to every call on its own, nothing held: none (the
    /// requests as they came); clear-tool-uses (Anthropic's
    /// clear_tool_uses_20250919 defaults: past 100k tokens, all but the
    /// last 3 tool results cleared, no clear_at_least); langchain-trim
    /// (trim_messages at --budget); observation-masking (the last 10 tool
    /// results kept, older ones replaced, as in "The Complexity Trap").
    /// The recipes given, and --suggest's, run as `serve` runs them: held,
    /// and trimmed in steps. --suggest tries a grid: trim
    /// at 25/50/75/100% of --budget, each alone, after compact-tools
    /// --keep-last 1/3/10 --max-result-tokens 100 with and without filter
    /// --previous-cycles, and after compact-tools --keep-last 1/3/10
    /// --max-result-tokens 400 and 600.
    #[command(after_help = "Examples:
  ctxclean replay ~/.claude/projects/ -- compact-tools --keep-last 3
  ctxclean replay sessions/ --recipe mine.toml --compare other.toml --budget 8000
  ctxclean replay sessions/ --suggest --min-recall 0.95 --budget 50000 > suggested.toml
  ctxclean replay sessions/ --suggest --min-worst 0.9 --save-recipe suggested.toml
  ctxclean replay session.jsonl --jsonl -- trim --max-tokens 20000
  ctxclean replay session.jsonl --forwarded theirs=saved/ --model claude-sonnet-4-5")]
    Replay(ReplayArgs),
    /// What the proxy's log says was billed: per day and model, requests,
    /// billed tokens by kind, dollars, the cache-read share, what the
    /// requests as they came would have cost (estimate), cache misses by
    /// reason, and billed against counted.
    ///
    /// Reads the JSON lines `ctxclean serve --log FILE` writes (several
    /// files, or standard input). A `--dry-run` log reads the same: what
    /// the proxy would have saved, with nothing changed. Lines that are
    /// not the proxy's are skipped and counted; an input with none of its
    /// lines in the first 64 MiB is not a log (exit 1).
    #[command(after_help = "Examples:
  ctxclean bill proxy.log
  ctxclean bill proxy.log --json
  ctxclean bill proxy.log --svg dollars.svg")]
    Bill(BillArgs),
    /// Print a shell completion script.
    #[command(hide = true)]
    Completions(CompletionsArgs),
    /// Print a man page (roff): ctxclean's, or a subcommand's.
    #[command(hide = true)]
    Man(ManArgs),
    /// The units a provider's prompt cache sees in each request body read
    /// from standard input (one JSON body a line): for `bench/upstream.py`,
    /// which bills with ctxclean's counts so that its bill, `bill`'s and
    /// `replay`'s can be compared to the token. A body past 32 MiB (`serve
    /// --max-body`'s default) is refused.
    #[command(hide = true)]
    CacheUnits(CacheUnitsArgs),
}

/// `serve --max-body`'s default, and the longest body `cache-units` reads.
pub const MAX_BODY: usize = 32 << 20;

#[derive(Args, Debug, Clone)]
pub struct CacheUnitsArgs {
    /// The bodies' API: `anthropic`, `openai`, `responses` or `gemini`.
    #[arg(long, value_name = "FORMAT", value_parser = format_parser())]
    pub format: Format,

    /// The tokenizer that counts.
    #[arg(long, value_enum, default_value = "o200k_base")]
    pub tokenizer: TokenizerArg,
}

#[derive(Args, Debug, Clone)]
pub struct BillArgs {
    /// The logs (`-` or none: standard input).
    #[arg(value_name = "LOG")]
    pub logs: Vec<PathBuf>,

    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,

    /// Also write a chart of dollars per day (billed, and as the requests
    /// came) as a standalone SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// A row per day and model (`day`), or per conversation
    /// (`conversation`: the log's `conversation`, one number for every
    /// request that continued it, rows in the order each began).
    #[arg(long, value_enum, default_value = "day")]
    pub by: BillBy,

    /// Price every request at this model's prices (its billed tokens; the
    /// proxy's estimate as they came scaled alike), whatever model it
    /// named: for traffic whose model the table does not know. Without
    /// it, a request is priced as the proxy priced it, by the model its
    /// body named; one it could not price is said to be unpriced.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// Add or override models and prices (as `stats --prices`).
    #[arg(long, value_name = "FILE", requires = "model")]
    pub prices: Option<PathBuf>,
}

/// What a row of `ctxclean bill` adds up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BillBy {
    /// A day and model.
    Day,
    /// A conversation.
    Conversation,
}

#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,

    /// A recipe to replay (the TOML of `ctxclean apply`); or give a chain
    /// after `--`.
    #[arg(long, value_name = "FILE")]
    pub recipe: Option<PathBuf>,

    /// More recipes to replay side by side (repeat the flag).
    #[arg(long, value_name = "FILE")]
    pub compare: Vec<PathBuf>,

    /// The budget of the langchain-trim baseline and of --suggest's grid,
    /// in tokens.
    #[arg(long, value_name = "TOKENS", default_value_t = 100_000)]
    pub budget: usize,

    /// As `serve --cache-horizon`: a conversation held is cleaned again when
    /// that saves within this many more requests [default: rent or buy].
    #[arg(long, value_name = "REQUESTS")]
    pub cache_horizon: Option<usize>,

    /// Print per recipe, and per session, as JSON.
    #[arg(long, conflicts_with = "jsonl")]
    pub json: bool,

    /// Print one JSON object per recipe per model call.
    #[arg(long)]
    pub jsonl: bool,

    /// Try a grid of recipes (see above) and write the cheapest that keeps
    /// --min-recall of the evidence on average, --min-worst in its worst
    /// session, and makes no valid body invalid, as a TOML recipe for
    /// `serve --recipe`: alone on standard output (the table then goes to
    /// standard error), or into --save-recipe FILE. When none does, says
    /// why and exits 1.
    #[arg(long)]
    pub suggest: bool,

    /// Also replay the offline optimum, a row `oracle` beside `none`: it
    /// knows the future, which no proxy can. It evicts only tool results,
    /// and the model's own large argument values, whose strings the model
    /// uses again only from a later copy if at all, and only when that
    /// pays over the calls still to come (costs an extra pass over each
    /// session).
    #[arg(long)]
    pub oracle: bool,

    /// Also replay the oracle at a recall under 1, a row `oracle 99%`: it
    /// may also evict what the model uses again, losing up to 1 - SHARE of
    /// each session's evidence, where that saves the most reads per string
    /// lost (the yardstick for a recipe held to that recall; costs the
    /// oracle's pass, and a read of each request's length). Repeatable: a
    /// row per share (the plans share the pass). With --suggest, the
    /// suggestion says what share of each one's saving the recipe reaches
    #[arg(long, value_name = "SHARE")]
    pub oracle_recall: Vec<f64>,

    /// The mean recall --suggest requires (a share, 0 to 1; default 0.95).
    #[arg(long, value_name = "SHARE", requires = "suggest")]
    pub min_recall: Option<f64>,

    /// The recall --suggest requires of the worst session (a share, 0 to
    /// 1; default 0.90, or --min-recall when that is lower).
    #[arg(long, value_name = "SHARE", requires = "suggest")]
    pub min_worst: Option<f64>,

    /// Write --suggest's recipe into FILE (the table stays on standard
    /// output).
    #[arg(long, value_name = "FILE", requires = "suggest")]
    pub save_recipe: Option<PathBuf>,

    /// Write a chart as a standalone SVG: each recipe's evidence recall
    /// against its tokens (the frontier), and the longest session's tokens
    /// sent per call, a line per recipe.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,

    /// Write each call's request body, as the agent sent it, into DIR (to
    /// send them through `ctxclean serve` yourself): one file per input,
    /// conversation and call, `STEM-HASH-CONVERSATION-call-NNNN.json`, HASH
    /// of the input's path as given. DIR must be new or empty.
    #[arg(long, value_name = "DIR")]
    pub write_requests: Option<PathBuf>,

    /// With --write-requests: DIR may hold files already; the request files
    /// of the same names are replaced (regular files only: never a link).
    #[arg(long, requires = "write_requests")]
    pub replace_requests: bool,

    /// Account what another proxy (or `ctxclean serve`) forwarded, beside
    /// the recipes: NAME is its row, DIR holds the body it forwarded for each
    /// call, named as --write-requests names them (send those through it and
    /// save what its upstream received under the same names). Priced, checked
    /// and searched for evidence by the same rules, `cache_control` markers
    /// aside. Repeatable.
    #[arg(long, value_name = "NAME=DIR")]
    pub forwarded: Vec<String>,

    /// The chain to replay, after `--`: `-- compact-tools --keep-last 3 then trim --max-tokens 50000`.
    #[arg(last = true, value_name = "CHAIN")]
    pub chain: Vec<std::ffi::OsString>,
}

/// The longest any of `serve`'s timeouts may be, in seconds (about three
/// years): past it a deadline would overflow the clock.
const MAX_SECONDS: u64 = 100_000_000;

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// The server requests go to: `http://HOST:PORT` or `https://HOST`,
    /// with a path prefix if it has one (`https://openrouter.ai/api`).
    #[arg(long, value_name = "URL")]
    pub upstream: String,

    /// Where to listen. A non-loopback address is allowed, with a warning:
    /// the proxy forwards its callers' credentials.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub listen: String,

    /// The recipe (the TOML of `ctxclean apply`); or give a chain after `--`.
    #[arg(long, value_name = "FILE")]
    pub recipe: Option<PathBuf>,

    /// Bodies larger than this are refused (413).
    #[arg(long, value_name = "BYTES", default_value_t = MAX_BODY)]
    pub max_body: usize,

    /// Requests served at once (a request holds its slot from its whole
    /// body to its answer's end; an idle connection, or one still sending
    /// the body of a route that is cleaned, holds none); more wait. /healthz and
    /// /metrics are answered even when every slot is taken. Open
    /// connections are bounded at four times this, within the open-files
    /// limit: its soft limit is raised as far as that needs (one more file
    /// for the upstream connection of each request served, and 64 aside),
    /// and under a hard limit too low the bound is lowered, said at start.
    /// At most 1,000,000.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,

    /// Seconds a client has to send a request's headers, and that a
    /// kept-alive connection may wait idle for its next request; then it is
    /// closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    pub header_timeout: u64,

    /// Seconds a request body may go without sending anything, or may take
    /// before it must have come at 1 KiB/s on average: then it is answered
    /// 408 (in the provider's error shape) and its memory freed.
    /// Bodies being read share a budget of four times --max-body; past it a
    /// new body gets 503. A client that takes nothing of its answer for as
    /// long is let go (its connection closed, its slot freed).
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    pub body_timeout: u64,

    /// Seconds the cleaning of one request may take, summaries included:
    /// past it the body goes on as it came, said in the log (a summarizer
    /// that does not answer never holds a request longer). Cleanings run one
    /// per core, or four per core when the recipe summarizes; the wait for
    /// a free one counts.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    pub clean_timeout: u64,

    /// Seconds to connect to the upstream.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
    pub connect_timeout: u64,

    /// Seconds to wait for the upstream's answer to begin (504 after), and,
    /// once it streams, for each next piece of it (cut off after: the client
    /// has what came, and the log says why).
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
    pub timeout: u64,

    /// The request log (one JSON line per request); standard error if not
    /// given. Written by a thread of its own: a log that does not keep up
    /// holds no request; the lines it loses are said and counted.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,

    /// Forward every body as it came; log what the recipe would have changed.
    #[arg(long)]
    pub dry_run: bool,

    /// A conversation that comes back longer goes on as it went last time
    /// with the new messages appended (the provider's prompt cache serves
    /// all of it) until it passes the budget of the recipe's `trim`, or
    /// cleaning it again has paid for itself: by default once the reads of
    /// what the recipe would take out, added up request by request, reach
    /// the cache write that cleaning again costs (rent or buy); with this
    /// flag, when it costs less within this many more requests. 0: no
    /// request costs more than holding would.
    #[arg(long, value_name = "REQUESTS")]
    pub cache_horizon: Option<usize>,

    /// How long the provider's prompt cache keeps a prefix, in seconds
    /// (Anthropic's and OpenAI's default: 5 minutes; a request with a
    /// `"ttl": "1h"` marker, an hour): a conversation that comes back later
    /// is logged as a cache miss of that kind.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub cache_lifetime: u64,

    /// What the conversations held for the cache may keep in memory
    /// together, in MiB (the one used least recently is forgotten first).
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub hold_memory: usize,

    /// Price every request the log records at this model's prices (its
    /// billed tokens and the estimate as it came), whatever model its body
    /// names: for traffic whose model the table does not know, or that
    /// names none. Without it, a request is priced by its body's model,
    /// and one the table does not know is logged without dollars.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// Add or override models and prices (as `stats --prices`).
    #[arg(long, value_name = "FILE", requires = "model")]
    pub prices: Option<PathBuf>,

    /// Print what the proxy would do (routes, recipe, upstream) and exit.
    #[arg(long)]
    pub print_config: bool,

    /// The chain to apply, after `--`: `-- filter --previous-cycles then trim --max-tokens 100000`.
    #[arg(last = true, value_name = "CHAIN")]
    pub chain: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug, Clone)]
pub struct ApplyArgs {
    /// The recipe: a TOML file of `[[step]]` tables.
    #[arg(value_name = "RECIPE")]
    pub recipe: PathBuf,

    /// Print the chain the recipe runs, as a command line, and exit.
    #[arg(long)]
    pub print_chain: bool,

    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// Transcript files (JSON or JSONL; an agent's SQLite database, OpenCode's `opencode.db`, Crush's `.crush/crush.db`, Grok CLI's `~/.grok/grok.db`, Goose's `sessions.db`, Cursor's `globalStorage/state.vscdb`, Zed's `threads/threads.db` or Amazon Q's `amazon-q/data.sqlite3`, read-only); standard input when none is given, or for `-`.
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// Read the inputs as this format instead of detecting it.
    #[arg(long, value_name = "FORMAT", value_parser = format_parser())]
    pub from: Option<Format>,

    /// Skip blank, comment (`//`) and malformed JSONL lines instead of failing;
    /// they are counted in the report and kept in place in the output.
    #[arg(long)]
    pub skip_invalid: bool,

    /// The tokenizer that counts tokens [default: the one of --model's
    /// provider when OpenAI's, else o200k_base]: o200k_base, cl100k_base,
    /// p50k_base, r50k_base, approx, or
    /// `hf:PATH`: a Hugging Face `tokenizer.json` (a local model's), with
    /// the per-message tokens of its chat template (ChatML, Llama 3) when
    /// its vocabulary tells which.
    #[arg(long, value_name = "NAME", value_parser = parse_tokenizer)]
    pub tokenizer: Option<TokenizerChoice>,

    /// The model the transcript goes to: its context window (the routing
    /// hint of `stats`), its prices (dollars in `stats` and in summary
    /// lines) and, for OpenAI models, its tokenizer. From a snapshot of
    /// LiteLLM's model table; provider prefixes and dated suffixes are
    /// tolerated (`claude-sonnet-4-5-20250929`).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// Add or override models and prices: a JSON file shaped like LiteLLM's
    /// `model_prices_and_context_window.json`, or TOML `[models.NAME]`
    /// tables (provider, max_input_tokens, input, output, cache_write,
    /// cache_read: USD per token).
    #[arg(long, value_name = "FILE", requires = "model")]
    pub prices: Option<PathBuf>,

    /// In directories, take files whose name matches PATTERN (`*`, `?`,
    /// `[a-z]`, `{a,b}`; with a `/`, matched against the path below the
    /// directory, `**` crossing folders). Repeatable. [default: *.json,
    /// *.jsonl]. A walk reads regular files and links to them; a FIFO or a
    /// device it matches, a broken link, a link to a directory are passed
    /// over and said.
    #[arg(long, value_name = "PATTERN")]
    pub glob: Vec<String>,

    /// In directories, also take hidden files and folders (names starting with `.`).
    #[arg(long)]
    pub hidden: bool,

    /// Process N files, and chunks of one-conversation-per-line JSONL files,
    /// in parallel [default: the number of cores]. Output order is input order.
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,

    /// When a file fails, report it, skip it and go on with the others; exit
    /// 1 at the end with the list of failures. Without it the run stops at the
    /// first error, and the failing file's output is not written.
    #[arg(long)]
    pub keep_going: bool,
}

#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Write the transcript to PATH instead of standard output. A regular
    /// file is written whole to a temporary file beside it, then renamed into
    /// place; a FIFO, a device or a pipe (/dev/stdout) is written directly.
    #[arg(short, long, value_name = "PATH", conflicts_with_all = ["out_dir", "in_place"])]
    pub output: Option<PathBuf>,

    /// Write each input's output to DIR, mirroring the paths of files found
    /// in directories (a file given by name goes to DIR/NAME). An agent's
    /// database of several sessions needs it: a file each.
    #[arg(long, value_name = "DIR", conflicts_with = "in_place")]
    pub out_dir: Option<PathBuf>,

    /// Write each input's output back over it: a temporary file beside it,
    /// flushed, synced and renamed (owner and mode kept). Regular files only;
    /// a file that did not change is not rewritten; a file that changes while
    /// it is processed, that another process holds open for writing, or that
    /// another run is rewriting, is left alone (lines appended while it is
    /// being replaced are added to its end); on any error the input is
    /// untouched.
    #[arg(long)]
    pub in_place: bool,

    /// With --in-place, keep each input's previous content at INPUT+SUFFIX
    /// (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a
    /// name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it).
    #[arg(long, value_name = "SUFFIX", requires = "in_place")]
    pub backup: Option<String>,

    /// Write a JSON report to PATH (`-`: standard error): tokens before and
    /// after per conversation, and every message removed, modified or added,
    /// with the reason. PATH may be a FIFO or /dev/stdout; never a file the
    /// run reads (an input, the recipe, --prices) or writes (the output, a
    /// backup, another report).
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,

    /// Write one JSON line per conversation to PATH as the run goes (`-`:
    /// standard error): command, source, index, format, tokens and messages
    /// before and after, counts of messages removed, modified and added,
    /// and the changes. A file's rows are written when it is done, none for
    /// a file that fails. For collecting the reports of many runs (Spark).
    #[arg(long, value_name = "PATH")]
    pub report_jsonl: Option<PathBuf>,

    /// Write the steps of this command (or chain) to FILE as a recipe for
    /// `ctxclean apply`, then run it: the steps' flags, with --model, --to,
    /// --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor
    /// where output goes, which a recipe may not hold).
    #[arg(long, value_name = "FILE")]
    pub save_recipe: Option<PathBuf>,

    /// Do not print the summary line on standard error (what was lost, notes
    /// and warnings are still said).
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Count every conversation's tokens before and after for the summary
    /// line (`1,643 → 977 tokens`; per step in a chain), as --report does.
    /// Without it the line counts only the messages that changed (`−666
    /// tokens`), which costs next to nothing.
    #[arg(short, long)]
    pub verbose: bool,

    /// Write the transcript in this request format (default: the input's
    /// format): openai, anthropic, responses, gemini, langchain, sharegpt or
    /// hf-chat, one request body per conversation. Log and export formats
    /// are written only from their own kind. What the target cannot express
    /// is a loss: counted on standard error, listed in the report.
    #[arg(long, value_name = "FORMAT", value_parser = format_parser())]
    pub to: Option<Format>,

    /// With --to, fail (exit 1, nothing written for that input) instead of
    /// losing anything the target cannot express.
    #[arg(long, requires = "to")]
    pub strict: bool,
}

#[derive(Args, Debug, Clone)]
pub struct StatsArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// No progress bar (and with --jsonl, no total line on standard error).
    #[arg(short, long)]
    pub quiet: bool,

    /// Print the report as JSON.
    #[arg(long, conflicts_with = "jsonl")]
    pub json: bool,

    /// Print one JSON object per conversation per line, flat and with the
    /// same keys and types on every line (for Spark, DuckDB, pandas): source,
    /// index, format, tokenizer, messages, tokens, by_role, by_tool, tool
    /// calls and results, images, opaque bytes, logged usage. No totals.
    /// Schema: schema/stats-row.json.
    #[arg(long, conflicts_with_all = ["per_message", "tools", "timeline"])]
    pub jsonl: bool,

    /// List every message's tokens.
    #[arg(long)]
    pub per_message: bool,

    /// List every tool call in order, with its arguments and result size.
    #[arg(long)]
    pub tools: bool,

    /// Flag conversations over N tokens as needing a large-context model.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub large_context: usize,

    /// One table per conversation, or per file (summed over its conversations).
    #[arg(long, value_enum, default_value = "conversation")]
    pub by: ByArg,

    /// Draw each conversation's tokens message by message (cumulative),
    /// with the --max-tokens budget line and where `trim` would cut.
    #[arg(long)]
    pub timeline: bool,

    /// Write the timeline of every conversation as a standalone SVG chart.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// The budget of the timeline: its line, and where `trim --max-tokens N`
    /// would cut.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<usize>,
}

/// What `stats` makes a table for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ByArg {
    /// Each conversation.
    Conversation,
    /// Each input file.
    File,
}

#[derive(Args, Debug, Clone)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// Print only the problems: no count on standard error, no progress bar.
    #[arg(short, long)]
    pub quiet: bool,

    /// The API to check against [default: the one of the input's format:
    /// anthropic for Anthropic, Claude Code and Claude.ai transcripts, gemini
    /// for Gemini and AI Studio, responses for Responses and Codex, openai
    /// otherwise].
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,

    /// Print the problems as JSON.
    #[arg(long)]
    pub json: bool,

    /// Check each conversation as a request about to be sent, which must
    /// keep rules a transcript at rest need not: OpenAI chat's tool calls
    /// all answered (the cycle at the end too), a Responses reasoning item
    /// followed by the item it produced, and with Anthropic's thinking on,
    /// the assistant turn in progress starting with its thinking.
    #[arg(long)]
    pub request: bool,
}

/// Providers for `validate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    /// OpenAI Chat Completions and compatible servers.
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini generateContent.
    Gemini,
    /// OpenAI Responses input items (parallel calls as separate items).
    Responses,
}

#[derive(Args, Debug, Clone)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug, Clone)]
pub struct CompactArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Compact candidate results larger than N tokens.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_result_tokens: usize,

    /// Then compact the oldest remaining candidates, whatever their size,
    /// while all tool results together exceed N tokens.
    #[arg(long, value_name = "N")]
    pub max_total_tokens: Option<usize>,

    /// Never touch the last K results.
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub keep_last: usize,

    /// Never compact these tools' results (comma list).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub exclude_tools: Vec<String>,

    /// Compact only these tools' results (comma list).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub only_tools: Option<Vec<String>>,

    /// Do nothing unless the conversation has more than N tokens.
    #[arg(long, value_name = "N")]
    pub trigger_tokens: Option<usize>,

    /// Do nothing unless at least N tokens would be saved (clearing breaks
    /// prompt caches, so small savings are not worth it).
    #[arg(long, value_name = "N")]
    pub clear_at_least: Option<usize>,

    /// In every result, the recent ones too, cut each JSON string value (or
    /// the text) longer than CHARS with `…[N chars]`.
    #[arg(long, value_name = "CHARS")]
    pub truncate_items: Option<usize>,

    /// How many characters of a text result the description shows.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub preview_chars: usize,

    /// Also replace large argument values (over 64 characters of JSON) of the
    /// compacted results' calls with "[cleared]".
    #[arg(long)]
    pub clear_inputs: bool,
}

#[derive(Args, Debug, Clone)]
pub struct FilterArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Before the last user message: drop tool results, strip tool calls from
    /// assistant messages that also say something, drop assistant messages
    /// that only called tools.
    #[arg(long)]
    pub previous_cycles: bool,

    /// Keep what agent NAME would have heard in a multi-agent memory: its own
    /// replies, `world` messages, human messages addressed to everyone or to
    /// it, other agents' messages that @-mention it at a paragraph start.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,

    /// With --agent: keep only messages whose `chatId` is ID.
    #[arg(long, value_name = "ID", requires = "agent")]
    pub chat_id: Option<String>,

    /// Of calls to TOOL with the same value of argument ARG, keep only the
    /// latest (and its result); `TOOL=*` keys on all the arguments, and
    /// TOOL alone on none: each call replaces all the earlier ones (a
    /// to-do list rewritten whole, as Claude Code's `TodoWrite`).
    /// Repeatable, e.g. `--supersede write_file=path --supersede fetch=url
    /// --supersede TodoWrite`.
    #[arg(long, value_name = "TOOL[=ARG]", value_parser = parse_supersede)]
    pub supersede: Vec<(String, String)>,

    /// Replace images an assistant has already answered (before the last
    /// user message) with `[image removed: MEDIA_TYPE, N bytes]`.
    #[arg(long)]
    pub strip_processed_images: bool,

    /// Replace a tool result identical to an earlier result of the same tool
    /// with `[same result as message N]`.
    #[arg(long)]
    pub dedupe_tool_results: bool,

    /// Replace a tool result every distinctive string of which (paths, file
    /// names, URLs, identifiers, numbers, quoted strings) appears in a later
    /// message with `[tool result of TOOL moved past: …; N bytes]`, and so a
    /// call's large argument values (a Write's content, an Edit's strings:
    /// `[KEY of this TOOL call moved past: …; N bytes]`, its path and command
    /// kept): what they named is still in the conversation, later.
    #[arg(long)]
    pub moved_past: bool,

    /// Replace the large argument strings (over 64 bytes of JSON, also
    /// inside a MultiEdit's `edits`) of a call
    /// that failed (its result flagged as an error, or reading as one) and
    /// was retried (a later call wrote to the same file or page: an Edit
    /// again, a Write, a MultiEdit) with `[KEY of this TOOL call, which
    /// failed and was retried on the same file; N bytes]`: the content a
    /// Write failed to write, the strings of an Edit that did not apply.
    /// The call's path, its short values and the error it got stay; the
    /// last attempt on a file stays whole.
    #[arg(long)]
    pub retried_failures: bool,

    /// Replace the large argument strings (over 64 bytes of JSON) of a call
    /// that wrote to a file and succeeded, once a later call read that file
    /// again whole (a call that names only the file, and did not fail),
    /// with `[KEY of this TOOL call: the file was read again later, whole;
    /// N bytes]`: what it wrote is in the conversation as the file read
    /// then. Its path, its short values and its result stay.
    #[arg(long)]
    pub read_again: bool,

    /// Remove thinking and reasoning blocks from assistant turns older than
    /// the last --keep-thinking-turns.
    #[arg(long)]
    pub drop_thinking: bool,

    /// With --drop-thinking: how many of the last assistant turns keep theirs.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        requires = "drop_thinking"
    )]
    pub keep_thinking_turns: usize,

    /// Keep only messages of these roles (comma list; human and ai are aliases).
    #[arg(long, value_name = "ROLES", value_delimiter = ',', value_parser = role_parser())]
    pub include_roles: Option<Vec<Role>>,

    /// Drop messages of these roles.
    #[arg(long, value_name = "ROLES", value_delimiter = ',', value_parser = role_parser())]
    pub exclude_roles: Vec<Role>,

    /// Keep only messages with one of these names (case-insensitive).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub include_names: Option<Vec<String>>,

    /// Drop messages with one of these names.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub exclude_names: Vec<String>,

    /// Drop the calls of these tools and their results.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub exclude_tools: Vec<String>,

    /// Drop all tool traffic: results, calls, and assistant messages left empty.
    #[arg(long)]
    pub exclude_tool_calls: bool,
}

/// A token budget: a number, or the context window of --model, whole or in
/// part.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BudgetArg {
    /// N tokens.
    Tokens(usize),
    /// This share (0 < p <= 100) of the --model's context window.
    Window(f64),
}

/// `8000`, `context`, `80%`.
fn parse_budget(s: &str) -> Result<BudgetArg, String> {
    if s == "context" {
        return Ok(BudgetArg::Window(100.0));
    }
    if let Some(p) = s.strip_suffix('%') {
        return match p.parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => Ok(BudgetArg::Window(p)),
            _ => Err(format!(
                "expected a share of the context window from 0 to 100%, got '{s}'"
            )),
        };
    }
    s.parse::<usize>().map(BudgetArg::Tokens).map_err(|_| {
        format!("expected a number of tokens, `context` or a share such as `80%`, got '{s}'")
    })
}

/// `TOOL=ARG`, `TOOL=*` or `TOOL` for --supersede (`TOOL`: an empty ARG,
/// every call of TOOL keyed alike).
fn parse_supersede(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((tool, arg)) if !tool.is_empty() && !arg.is_empty() => {
            Ok((tool.to_string(), arg.to_string()))
        }
        None if !s.is_empty() => Ok((s.to_string(), String::new())),
        _ => Err(format!("expected TOOL=ARG, TOOL=* or TOOL, got '{s}'")),
    }
}

#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("limit").required(true).multiple(true)
    .args(["max_tokens", "max_messages", "max_turns"])))]
pub struct TrimArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// The budget: the conversation's tokens as `stats` counts them with
    /// --tokenizer, reply priming included.
    /// `context` (the window of --model) or a share of it (`80%`) are
    /// budgets too.
    #[arg(long, value_name = "N", value_parser = parse_budget)]
    pub max_tokens: Option<BudgetArg>,

    /// Keep the end of the conversation (`last`) or its start (`first`).
    #[arg(long, value_enum, default_value = "last")]
    pub strategy: StrategyArg,

    /// Drop units from the front of what is kept until one starts with one
    /// of these roles (comma list: system, developer, user, assistant, tool,
    /// function; human and ai are aliases). Only with `last`.
    #[arg(long, value_name = "ROLES", value_delimiter = ',', value_parser = role_parser())]
    pub start_on: Option<Vec<Role>>,

    /// Drop units from the end until one ends with one of these roles.
    #[arg(long, value_name = "ROLES", value_delimiter = ',', value_parser = role_parser())]
    pub end_on: Option<Vec<Role>>,

    /// Do not keep the first system message apart: trim it like any other.
    #[arg(long)]
    pub no_system: bool,

    /// Cut the first message that does not fit to the part that does: its
    /// last lines with `last`, its first lines with `first`.
    #[arg(long)]
    pub allow_partial: bool,

    /// Keep at most N messages besides the system message (whole units).
    #[arg(long, value_name = "N")]
    pub max_messages: Option<usize>,

    /// Keep the last N user turns (`first`: the first N). A turn starts at a
    /// user message and runs to the next one.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<usize>,

    /// In formats whose API wants the user first (Anthropic, Claude Code,
    /// Claude.ai, Cline, Gemini, AI Studio), drop messages up to a real user
    /// message instead of opening the kept messages with a one-line
    /// `[Earlier conversation trimmed: N messages, M tokens]` user message.
    #[arg(long, conflicts_with = "start_on")]
    pub no_placeholder: bool,

    /// Cut in steps of about N tokens (with `last`): the first message kept
    /// is one where the conversation's running total crosses a multiple of
    /// N, and what is kept leaves N tokens of room under the budget. As the
    /// conversation grows the cut holds, and what is kept keeps the same
    /// start (prompt caches keep hitting), until the room is used up; then
    /// a block of about N tokens goes at once. `ctxclean serve` uses half
    /// the budget unless given, with checkpoints every N/8 tokens.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub step: Option<u64>,

    /// What --max-tokens counts: `counted`, ctxclean's tokens (--tokenizer);
    /// or `billed`, the provider's input tokens. A billed budget is turned
    /// into ctxclean's with a line fitted on the usage the log recorded per
    /// call (billed = fixed + ratio × counted, the fixed part being the
    /// system prompt and tools a log does not hold; `stats` shows it); in
    /// `serve`, with the ratio learned from the answers of the request's
    /// model (after 5); else with a default: ratio 1.2 for Claude (counted
    /// with o200k as a stand-in), 1.0 for the others, no fixed part, said
    /// in a warning.
    #[arg(long, value_enum, value_name = "UNIT", default_value = "counted")]
    pub budget_in: BudgetInArg,

    /// Set by `serve`: without --step, steps of half the budget.
    #[arg(skip)]
    pub step_by_default: bool,
}

/// What a budget counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BudgetInArg {
    /// ctxclean's count, with --tokenizer.
    Counted,
    /// The provider's billed input tokens.
    Billed,
}

#[derive(Args, Debug, Clone)]
pub struct SummarizeArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Summarize conversations over N tokens (as `stats` counts them);
    /// smaller ones pass through unchanged.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub threshold: usize,

    /// What --threshold counts: `counted`, ctxclean's tokens; or `billed`,
    /// the provider's input tokens, read as `trim --budget-in` reads them.
    #[arg(long, value_enum, value_name = "UNIT", default_value = "counted")]
    pub budget_in: BudgetInArg,

    /// Keep the last N messages verbatim.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub keep: usize,

    /// When nothing older than the last --keep messages is left to
    /// summarize, halve --keep down to N.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub min_keep: usize,

    /// Who writes the summary.
    #[arg(long, value_enum, default_value = "extractive")]
    pub engine: EngineArg,

    /// The server's base URL [default: http://localhost:11434 for ollama,
    /// https://api.openai.com/v1 for openai].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// The summarizer's model [default: llama3.2 for ollama, gpt-4o-mini
    /// for openai]. (`--model` names the model the transcript goes to, as
    /// for every command.)
    #[arg(long, value_name = "NAME")]
    pub engine_model: Option<String>,

    /// The environment variable holding the API key for `openai` (sent as a
    /// bearer token; no header when it is unset, for local servers).
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,

    /// Give up on one request after SECS seconds (it is retried twice).
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = parse_secs)]
    pub timeout: f64,

    /// Replace the default summary prompt with the text of FILE
    /// (`{max_tokens}` in it is replaced by --max-summary-tokens).
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,

    /// The summary's budget in tokens.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_summary_tokens: usize,

    /// The most tokens a model is sent; the middle of a longer input is cut
    /// with a marker.
    #[arg(long, value_name = "N", default_value_t = 32_000)]
    pub max_input_tokens: usize,

    /// The summarizing model's context window in tokens (a local model's
    /// is often 2,048–8,192): each request is made to fit it, the older
    /// messages summarized in chunks folded into one summary, the summary's
    /// budget at most an eighth of the window; told to Ollama as `num_ctx`.
    /// Unset, a server that refuses a request for its length and names its
    /// window is asked again within it, and the run's later conversations
    /// within it at once.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(256..))]
    pub engine_context: Option<u64>,

    /// The summary message's role: `system`, or `user` for APIs that take a
    /// single system message.
    #[arg(long, value_enum, default_value = "system")]
    pub placement: PlacementArg,

    /// When no summary can be made (the server is down, times out, answers
    /// with an error): `truncate` drops the older messages with a one-line
    /// note saying how many (the reason on standard error and in the
    /// report); `keep` leaves the conversation as it was; `fail`
    /// exits 1 and writes nothing for that input. [default: truncate; keep
    /// with --in-place and no --backup]
    #[arg(long, value_enum, value_name = "WHAT")]
    pub on_failure: Option<OnFailureArg>,

    /// Keep summaries in DIR: a rerun makes no request, and a grown
    /// transcript only adds its new older messages to the cached summary.
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
}

/// Summary engines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// Offline and deterministic: extracts asks, answers, decisions and keys.
    Extractive,
    /// An Ollama server's /api/chat.
    Ollama,
    /// An OpenAI-compatible server's /chat/completions.
    Openai,
}

/// What a failed summary becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnFailureArg {
    /// Drop the older messages, with a note saying how many.
    Truncate,
    /// Leave the conversation as it was.
    Keep,
    /// Exit 1; nothing is written for that input.
    Fail,
}

/// Where the summary message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    /// A system message after the first system message.
    System,
    /// A user message.
    User,
}

/// Seconds, positive and finite.
fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(v),
        _ => Err(format!("expected a positive number of seconds, got '{s}'")),
    }
}

/// Which end `trim` keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// The most recent messages.
    Last,
    /// The first messages.
    First,
}

/// Role names for --start-on and --end-on.
fn role_parser() -> impl clap::builder::TypedValueParser<Value = Role> {
    clap::builder::PossibleValuesParser::new([
        "system",
        "developer",
        "user",
        "assistant",
        "tool",
        "function",
        "human",
        "ai",
    ])
    .map(|name| Role::parse(&name).expect("a listed role"))
}

#[derive(Args, Debug, Clone)]
pub struct ManArgs {
    /// The subcommand whose page to print.
    pub page: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    // `clap_complete::Shell`'s names: the binary parses it (this crate
    // does not depend on clap_complete).
    #[arg(value_parser = ["bash", "elvish", "fish", "powershell", "zsh"])]
    pub shell: String,
}

/// The values of `--from` and `--to`: the library's format names.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    clap::builder::PossibleValuesParser::new(Format::ALL.map(Format::name))
        .map(|name| name.parse::<Format>().expect("a listed format name"))
}

/// Tokenizers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TokenizerArg {
    /// GPT-4o, GPT-4.1, o1, o3 and later.
    #[value(name = "o200k_base")]
    O200kBase,
    /// GPT-4 and GPT-3.5-turbo.
    #[value(name = "cl100k_base")]
    Cl100kBase,
    /// Codex, text-davinci-002/003.
    #[value(name = "p50k_base")]
    P50kBase,
    /// GPT-3.
    #[value(name = "r50k_base")]
    R50kBase,
    /// LangChain's estimate: ceil(chars / 4) + 3 per message.
    #[value(name = "approx")]
    Approx,
}

/// `--tokenizer`: a tiktoken encoding, or a Hugging Face tokenizer file.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenizerChoice {
    /// A named encoding.
    Named(TokenizerArg),
    /// `hf:PATH`.
    Hf(PathBuf),
}

pub fn parse_tokenizer(s: &str) -> Result<TokenizerChoice, String> {
    if let Some(path) = s.strip_prefix("hf:") {
        if path.is_empty() {
            return Err("hf: needs the path of a tokenizer.json (hf:PATH)".into());
        }
        if !cfg!(feature = "hf") {
            return Err(format!(
                "hf:{path}: this ctxclean was built without Hugging Face tokenizers; \
                 build it with them: cargo install ctxclean --features hf"
            ));
        }
        return Ok(TokenizerChoice::Hf(PathBuf::from(path)));
    }
    TokenizerArg::from_str(s, false).map(TokenizerChoice::Named).map_err(|_| {
        format!("unknown tokenizer '{s}': o200k_base, cl100k_base, p50k_base, r50k_base, approx or hf:PATH")
    })
}

impl From<TokenizerArg> for Encoding {
    fn from(t: TokenizerArg) -> Encoding {
        match t {
            TokenizerArg::O200kBase => Encoding::O200kBase,
            TokenizerArg::Cl100kBase => Encoding::Cl100kBase,
            TokenizerArg::P50kBase => Encoding::P50kBase,
            TokenizerArg::R50kBase => Encoding::R50kBase,
            TokenizerArg::Approx => Encoding::Approx,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_encoding_has_a_flag_value() {
        for e in Encoding::ALL {
            let arg = TokenizerArg::from_str(e.name(), false).unwrap();
            assert_eq!(Encoding::from(arg), e);
        }
        for f in Format::ALL {
            let cli = Cli::try_parse_from(["ctxclean", "stats", "--from", f.name()]).unwrap();
            let Command::Stats(args) = cli.command else {
                unreachable!()
            };
            assert_eq!(args.input.from, Some(f));
        }
    }
}
