# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ctxclean_global_optspecs
    string join \n h/help V/version
end

function __fish_ctxclean_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ctxclean_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ctxclean_using_subcommand
    set -l cmd (__fish_ctxclean_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ctxclean -n "__fish_ctxclean_needs_command" -s h -l help -d 'Print help'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "stats" -d 'Count tokens: per conversation, by role, tool and image'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "filter" -d 'Drop what the next model call does not need'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "compact-tools" -d 'Replace heavy tool results with faithful, computed metadata'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "trim" -d 'Fit a token budget, keeping every tool call with its results'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "summarize" -d 'Past a token threshold, replace older turns with a summary'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "validate" -d 'Check that each conversation would be accepted by a provider\'s API'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "convert" -d 'Write transcripts in another format (or the same one, unchanged)'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "apply" -d 'Run a saved chain of steps (a TOML recipe) over the inputs'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "serve" -d 'Clean every request in flight: a proxy in front of an OpenAI-, Anthropic-, Gemini- or Ollama-compatible server'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "replay" -d 'Replay recorded sessions through recipes, call by call, as `serve` would have cleaned them: tokens, dollars with caching, and the evidence the model used next still kept'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "bill" -d 'What the proxy\'s log says was billed: per day and model, requests, billed tokens by kind, dollars, the cache-read share, what the requests as they came would have cost (estimate), cache misses by reason, and billed against counted'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "man" -d 'Print a man page (roff): ctxclean\'s, or a subcommand\'s'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "cache-units" -d 'The units a provider\'s prompt cache sees in each request body read from standard input (one JSON body a line): for `bench/upstream.py`, which bills with ctxclean\'s counts so that its bill, `bill`\'s and `replay`\'s can be compared to the token. A body past 32 MiB (`serve --max-body`\'s default) is refused'
complete -c ctxclean -n "__fish_ctxclean_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l from -d 'Read the inputs as this format instead of detecting it' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l tokenizer -d 'The tokenizer that counts tokens [default: the one of --model\'s provider when OpenAI\'s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model\'s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l model -d 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM\'s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l prices -d 'Add or override models and prices: a JSON file shaped like LiteLLM\'s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l glob -d 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -s j -l jobs -d 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l large-context -d 'Flag conversations over N tokens as needing a large-context model' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l by -d 'One table per conversation, or per file (summed over its conversations)' -r -f -a "conversation\t'Each conversation'
file\t'Each input file'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l svg -d 'Write the timeline of every conversation as a standalone SVG chart' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l max-tokens -d 'The budget of the timeline: its line, and where `trim --max-tokens N` would cut' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l skip-invalid -d 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l hidden -d 'In directories, also take hidden files and folders (names starting with `.`)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l keep-going -d 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file\'s output is not written'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -s q -l quiet -d 'No progress bar (and with --jsonl, no total line on standard error)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l json -d 'Print the report as JSON'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l jsonl -d 'Print one JSON object per conversation per line, flat and with the same keys and types on every line (for Spark, DuckDB, pandas): source, index, format, tokenizer, messages, tokens, by_role, by_tool, tool calls and results, images, opaque bytes, logged usage. No totals. Schema: schema/stats-row.json'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l per-message -d 'List every message\'s tokens'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l tools -d 'List every tool call in order, with its arguments and result size'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -l timeline -d 'Draw each conversation\'s tokens message by message (cumulative), with the --max-tokens budget line and where `trim` would cut'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand stats" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l from -d 'Read the inputs as this format instead of detecting it' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l tokenizer -d 'The tokenizer that counts tokens [default: the one of --model\'s provider when OpenAI\'s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model\'s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l model -d 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM\'s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l prices -d 'Add or override models and prices: a JSON file shaped like LiteLLM\'s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l glob -d 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -s j -l jobs -d 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -s o -l output -d 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l out-dir -d 'Write each input\'s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent\'s database of several sessions needs it: a file each' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l backup -d 'With --in-place, keep each input\'s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l report -d 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l report-jsonl -d 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file\'s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l save-recipe -d 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps\' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l to -d 'Write the transcript in this request format (default: the input\'s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l agent -d 'Keep what agent NAME would have heard in a multi-agent memory: its own replies, `world` messages, human messages addressed to everyone or to it, other agents\' messages that @-mention it at a paragraph start' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l chat-id -d 'With --agent: keep only messages whose `chatId` is ID' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l supersede -d 'Of calls to TOOL with the same value of argument ARG, keep only the latest (and its result); `TOOL=*` keys on all the arguments, and TOOL alone on none: each call replaces all the earlier ones (a to-do list rewritten whole, as Claude Code\'s `TodoWrite`). Repeatable, e.g. `--supersede write_file=path --supersede fetch=url --supersede TodoWrite`' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l keep-thinking-turns -d 'With --drop-thinking: how many of the last assistant turns keep theirs' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l include-roles -d 'Keep only messages of these roles (comma list; human and ai are aliases)' -r -f -a "system\t''
developer\t''
user\t''
assistant\t''
tool\t''
function\t''
human\t''
ai\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l exclude-roles -d 'Drop messages of these roles' -r -f -a "system\t''
developer\t''
user\t''
assistant\t''
tool\t''
function\t''
human\t''
ai\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l include-names -d 'Keep only messages with one of these names (case-insensitive)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l exclude-names -d 'Drop messages with one of these names' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l exclude-tools -d 'Drop the calls of these tools and their results' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l skip-invalid -d 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l hidden -d 'In directories, also take hidden files and folders (names starting with `.`)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l keep-going -d 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file\'s output is not written'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l in-place -d 'Write each input\'s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -s q -l quiet -d 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -s v -l verbose -d 'Count every conversation\'s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l strict -d 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l previous-cycles -d 'Before the last user message: drop tool results, strip tool calls from assistant messages that also say something, drop assistant messages that only called tools'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l strip-processed-images -d 'Replace images an assistant has already answered (before the last user message) with `[image removed: MEDIA_TYPE, N bytes]`'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l dedupe-tool-results -d 'Replace a tool result identical to an earlier result of the same tool with `[same result as message N]`'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l moved-past -d 'Replace a tool result every distinctive string of which (paths, file names, URLs, identifiers, numbers, quoted strings) appears in a later message with `[tool result of TOOL moved past: …; N bytes]`, and so a call\'s large argument values (a Write\'s content, an Edit\'s strings: `[KEY of this TOOL call moved past: …; N bytes]`, its path and command kept): what they named is still in the conversation, later'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l retried-failures -d 'Replace the large argument strings (over 64 bytes of JSON, also inside a MultiEdit\'s `edits`) of a call that failed (its result flagged as an error, or reading as one) and was retried (a later call wrote to the same file or page: an Edit again, a Write, a MultiEdit) with `[KEY of this TOOL call, which failed and was retried on the same file; N bytes]`: the content a Write failed to write, the strings of an Edit that did not apply. The call\'s path, its short values and the error it got stay; the last attempt on a file stays whole'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l read-again -d 'Replace the large argument strings (over 64 bytes of JSON) of a call that wrote to a file and succeeded, once a later call read that file again whole (a call that names only the file, and did not fail), with `[KEY of this TOOL call: the file was read again later, whole; N bytes]`: what it wrote is in the conversation as the file read then. Its path, its short values and its result stay'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l drop-thinking -d 'Remove thinking and reasoning blocks from assistant turns older than the last --keep-thinking-turns'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -l exclude-tool-calls -d 'Drop all tool traffic: results, calls, and assistant messages left empty'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand filter" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l from -d 'Read the inputs as this format instead of detecting it' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l tokenizer -d 'The tokenizer that counts tokens [default: the one of --model\'s provider when OpenAI\'s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model\'s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l model -d 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM\'s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l prices -d 'Add or override models and prices: a JSON file shaped like LiteLLM\'s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l glob -d 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -s j -l jobs -d 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -s o -l output -d 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l out-dir -d 'Write each input\'s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent\'s database of several sessions needs it: a file each' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l backup -d 'With --in-place, keep each input\'s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l report -d 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l report-jsonl -d 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file\'s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l save-recipe -d 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps\' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l to -d 'Write the transcript in this request format (default: the input\'s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l max-result-tokens -d 'Compact candidate results larger than N tokens' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l max-total-tokens -d 'Then compact the oldest remaining candidates, whatever their size, while all tool results together exceed N tokens' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l keep-last -d 'Never touch the last K results' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l exclude-tools -d 'Never compact these tools\' results (comma list)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l only-tools -d 'Compact only these tools\' results (comma list)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l trigger-tokens -d 'Do nothing unless the conversation has more than N tokens' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l clear-at-least -d 'Do nothing unless at least N tokens would be saved (clearing breaks prompt caches, so small savings are not worth it)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l truncate-items -d 'In every result, the recent ones too, cut each JSON string value (or the text) longer than CHARS with `…[N chars]`' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l preview-chars -d 'How many characters of a text result the description shows' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l skip-invalid -d 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l hidden -d 'In directories, also take hidden files and folders (names starting with `.`)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l keep-going -d 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file\'s output is not written'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l in-place -d 'Write each input\'s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -s q -l quiet -d 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -s v -l verbose -d 'Count every conversation\'s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l strict -d 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -l clear-inputs -d 'Also replace large argument values (over 64 characters of JSON) of the compacted results\' calls with "[cleared]"'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand compact-tools" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l from -d 'Read the inputs as this format instead of detecting it' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l tokenizer -d 'The tokenizer that counts tokens [default: the one of --model\'s provider when OpenAI\'s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model\'s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l model -d 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM\'s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l prices -d 'Add or override models and prices: a JSON file shaped like LiteLLM\'s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l glob -d 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -s j -l jobs -d 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -s o -l output -d 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l out-dir -d 'Write each input\'s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent\'s database of several sessions needs it: a file each' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l backup -d 'With --in-place, keep each input\'s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l report -d 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l report-jsonl -d 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file\'s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l save-recipe -d 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps\' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l to -d 'Write the transcript in this request format (default: the input\'s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l max-tokens -d 'The budget: the conversation\'s tokens as `stats` counts them with --tokenizer, reply priming included. `context` (the window of --model) or a share of it (`80%`) are budgets too' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l strategy -d 'Keep the end of the conversation (`last`) or its start (`first`)' -r -f -a "last\t'The most recent messages'
first\t'The first messages'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l start-on -d 'Drop units from the front of what is kept until one starts with one of these roles (comma list: system, developer, user, assistant, tool, function; human and ai are aliases). Only with `last`' -r -f -a "system\t''
developer\t''
user\t''
assistant\t''
tool\t''
function\t''
human\t''
ai\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l end-on -d 'Drop units from the end until one ends with one of these roles' -r -f -a "system\t''
developer\t''
user\t''
assistant\t''
tool\t''
function\t''
human\t''
ai\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l max-messages -d 'Keep at most N messages besides the system message (whole units)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l max-turns -d 'Keep the last N user turns (`first`: the first N). A turn starts at a user message and runs to the next one' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l step -d 'Cut in steps of about N tokens (with `last`): the first message kept is one where the conversation\'s running total crosses a multiple of N, and what is kept leaves N tokens of room under the budget. As the conversation grows the cut holds, and what is kept keeps the same start (prompt caches keep hitting), until the room is used up; then a block of about N tokens goes at once. `ctxclean serve` uses half the budget unless given, with checkpoints every N/8 tokens' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l budget-in -d 'What --max-tokens counts: `counted`, ctxclean\'s tokens (--tokenizer); or `billed`, the provider\'s input tokens. A billed budget is turned into ctxclean\'s with a line fitted on the usage the log recorded per call (billed = fixed + ratio × counted, the fixed part being the system prompt and tools a log does not hold; `stats` shows it); in `serve`, with the ratio learned from the answers of the request\'s model (after 5); else with a default: ratio 1.2 for Claude (counted with o200k as a stand-in), 1.0 for the others, no fixed part, said in a warning' -r -f -a "counted\t'ctxclean\'s count, with --tokenizer'
billed\t'The provider\'s billed input tokens'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l skip-invalid -d 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l hidden -d 'In directories, also take hidden files and folders (names starting with `.`)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l keep-going -d 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file\'s output is not written'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l in-place -d 'Write each input\'s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -s q -l quiet -d 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -s v -l verbose -d 'Count every conversation\'s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l strict -d 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l no-system -d 'Do not keep the first system message apart: trim it like any other'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l allow-partial -d 'Cut the first message that does not fit to the part that does: its last lines with `last`, its first lines with `first`'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -l no-placeholder -d 'In formats whose API wants the user first (Anthropic, Claude Code, Claude.ai, Cline, Gemini, AI Studio), drop messages up to a real user message instead of opening the kept messages with a one-line `[Earlier conversation trimmed: N messages, M tokens]` user message'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand trim" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l from -d 'Read the inputs as this format instead of detecting it' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l tokenizer -d 'The tokenizer that counts tokens [default: the one of --model\'s provider when OpenAI\'s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model\'s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l model -d 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM\'s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l prices -d 'Add or override models and prices: a JSON file shaped like LiteLLM\'s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l glob -d 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -s j -l jobs -d 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -s o -l output -d 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l out-dir -d 'Write each input\'s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent\'s database of several sessions needs it: a file each' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l backup -d 'With --in-place, keep each input\'s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l report -d 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l report-jsonl -d 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file\'s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l save-recipe -d 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps\' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l to -d 'Write the transcript in this request format (default: the input\'s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l threshold -d 'Summarize conversations over N tokens (as `stats` counts them); smaller ones pass through unchanged' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l budget-in -d 'What --threshold counts: `counted`, ctxclean\'s tokens; or `billed`, the provider\'s input tokens, read as `trim --budget-in` reads them' -r -f -a "counted\t'ctxclean\'s count, with --tokenizer'
billed\t'The provider\'s billed input tokens'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l keep -d 'Keep the last N messages verbatim' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l min-keep -d 'When nothing older than the last --keep messages is left to summarize, halve --keep down to N' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l engine -d 'Who writes the summary' -r -f -a "extractive\t'Offline and deterministic: extracts asks, answers, decisions and keys'
ollama\t'An Ollama server\'s /api/chat'
openai\t'An OpenAI-compatible server\'s /chat/completions'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l url -d 'The server\'s base URL [default: http://localhost:11434 for ollama, https://api.openai.com/v1 for openai]' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l engine-model -d 'The summarizer\'s model [default: llama3.2 for ollama, gpt-4o-mini for openai]. (`--model` names the model the transcript goes to, as for every command.)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l api-key-env -d 'The environment variable holding the API key for `openai` (sent as a bearer token; no header when it is unset, for local servers)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l timeout -d 'Give up on one request after SECS seconds (it is retried twice)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l prompt-file -d 'Replace the default summary prompt with the text of FILE (`{max_tokens}` in it is replaced by --max-summary-tokens)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l max-summary-tokens -d 'The summary\'s budget in tokens' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l max-input-tokens -d 'The most tokens a model is sent; the middle of a longer input is cut with a marker' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l engine-context -d 'The summarizing model\'s context window in tokens (a local model\'s is often 2,048–8,192): each request is made to fit it, the older messages summarized in chunks folded into one summary, the summary\'s budget at most an eighth of the window; told to Ollama as `num_ctx`. Unset, a server that refuses a request for its length and names its window is asked again within it, and the run\'s later conversations within it at once' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l placement -d 'The summary message\'s role: `system`, or `user` for APIs that take a single system message' -r -f -a "system\t'A system message after the first system message'
user\t'A user message'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l on-failure -d 'When no summary can be made (the server is down, times out, answers with an error): `truncate` drops the older messages with a one-line note saying how many (the reason on standard error and in the report); `keep` leaves the conversation as it was; `fail` exits 1 and writes nothing for that input. [default: truncate; keep with --in-place and no --backup]' -r -f -a "truncate\t'Drop the older messages, with a note saying how many'
keep\t'Leave the conversation as it was'
fail\t'Exit 1; nothing is written for that input'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l cache -d 'Keep summaries in DIR: a rerun makes no request, and a grown transcript only adds its new older messages to the cached summary' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l skip-invalid -d 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l hidden -d 'In directories, also take hidden files and folders (names starting with `.`)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l keep-going -d 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file\'s output is not written'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l in-place -d 'Write each input\'s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -s q -l quiet -d 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -s v -l verbose -d 'Count every conversation\'s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -l strict -d 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand summarize" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l from -d 'Read the inputs as this format instead of detecting it' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l tokenizer -d 'The tokenizer that counts tokens [default: the one of --model\'s provider when OpenAI\'s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model\'s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l model -d 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM\'s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l prices -d 'Add or override models and prices: a JSON file shaped like LiteLLM\'s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l glob -d 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -s j -l jobs -d 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l provider -d 'The API to check against [default: the one of the input\'s format: anthropic for Anthropic, Claude Code and Claude.ai transcripts, gemini for Gemini and AI Studio, responses for Responses and Codex, openai otherwise]' -r -f -a "openai\t'OpenAI Chat Completions and compatible servers'
anthropic\t'Anthropic Messages'
gemini\t'Gemini generateContent'
responses\t'OpenAI Responses input items (parallel calls as separate items)'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l skip-invalid -d 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l hidden -d 'In directories, also take hidden files and folders (names starting with `.`)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l keep-going -d 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file\'s output is not written'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -s q -l quiet -d 'Print only the problems: no count on standard error, no progress bar'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l json -d 'Print the problems as JSON'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -l request -d 'Check each conversation as a request about to be sent, which must keep rules a transcript at rest need not: OpenAI chat\'s tool calls all answered (the cycle at the end too), a Responses reasoning item followed by the item it produced, and with Anthropic\'s thinking on, the assistant turn in progress starting with its thinking'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand validate" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l from -d 'Read the inputs as this format instead of detecting it' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l tokenizer -d 'The tokenizer that counts tokens [default: the one of --model\'s provider when OpenAI\'s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model\'s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l model -d 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM\'s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l prices -d 'Add or override models and prices: a JSON file shaped like LiteLLM\'s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l glob -d 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -s j -l jobs -d 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -s o -l output -d 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l out-dir -d 'Write each input\'s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent\'s database of several sessions needs it: a file each' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l backup -d 'With --in-place, keep each input\'s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l report -d 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l report-jsonl -d 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file\'s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l save-recipe -d 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps\' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l to -d 'Write the transcript in this request format (default: the input\'s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l skip-invalid -d 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l hidden -d 'In directories, also take hidden files and folders (names starting with `.`)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l keep-going -d 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file\'s output is not written'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l in-place -d 'Write each input\'s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -s q -l quiet -d 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -s v -l verbose -d 'Count every conversation\'s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -l strict -d 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand convert" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l from -d 'Read the inputs as this format instead of detecting it' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l tokenizer -d 'The tokenizer that counts tokens [default: the one of --model\'s provider when OpenAI\'s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model\'s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l model -d 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM\'s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l prices -d 'Add or override models and prices: a JSON file shaped like LiteLLM\'s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l glob -d 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -s j -l jobs -d 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -s o -l output -d 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l out-dir -d 'Write each input\'s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent\'s database of several sessions needs it: a file each' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l backup -d 'With --in-place, keep each input\'s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l report -d 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l report-jsonl -d 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file\'s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l save-recipe -d 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps\' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l to -d 'Write the transcript in this request format (default: the input\'s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l print-chain -d 'Print the chain the recipe runs, as a command line, and exit'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l skip-invalid -d 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l hidden -d 'In directories, also take hidden files and folders (names starting with `.`)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l keep-going -d 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file\'s output is not written'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l in-place -d 'Write each input\'s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -s q -l quiet -d 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -s v -l verbose -d 'Count every conversation\'s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -l strict -d 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand apply" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l upstream -d 'The server requests go to: `http://HOST:PORT` or `https://HOST`, with a path prefix if it has one (`https://openrouter.ai/api`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l listen -d 'Where to listen. A non-loopback address is allowed, with a warning: the proxy forwards its callers\' credentials' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l recipe -d 'The recipe (the TOML of `ctxclean apply`); or give a chain after `--`' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l max-body -d 'Bodies larger than this are refused (413)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l max-connections -d 'Requests served at once (a request holds its slot from its whole body to its answer\'s end; an idle connection, or one still sending the body of a route that is cleaned, holds none); more wait. /healthz and /metrics are answered even when every slot is taken. Open connections are bounded at four times this, within the open-files limit: its soft limit is raised as far as that needs (one more file for the upstream connection of each request served, and 64 aside), and under a hard limit too low the bound is lowered, said at start. At most 1,000,000' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l header-timeout -d 'Seconds a client has to send a request\'s headers, and that a kept-alive connection may wait idle for its next request; then it is closed' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l body-timeout -d 'Seconds a request body may go without sending anything, or may take before it must have come at 1 KiB/s on average: then it is answered 408 (in the provider\'s error shape) and its memory freed. Bodies being read share a budget of four times --max-body; past it a new body gets 503. A client that takes nothing of its answer for as long is let go (its connection closed, its slot freed)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l clean-timeout -d 'Seconds the cleaning of one request may take, summaries included: past it the body goes on as it came, said in the log (a summarizer that does not answer never holds a request longer). Cleanings run one per core, or four per core when the recipe summarizes; the wait for a free one counts' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l connect-timeout -d 'Seconds to connect to the upstream' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l timeout -d 'Seconds to wait for the upstream\'s answer to begin (504 after), and, once it streams, for each next piece of it (cut off after: the client has what came, and the log says why)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l log -d 'The request log (one JSON line per request); standard error if not given. Written by a thread of its own: a log that does not keep up holds no request; the lines it loses are said and counted' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l cache-horizon -d 'A conversation that comes back longer goes on as it went last time with the new messages appended (the provider\'s prompt cache serves all of it) until it passes the budget of the recipe\'s `trim`, or cleaning it again has paid for itself: by default once the reads of what the recipe would take out, added up request by request, reach the cache write that cleaning again costs (rent or buy); with this flag, when it costs less within this many more requests. 0: no request costs more than holding would' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l cache-lifetime -d 'How long the provider\'s prompt cache keeps a prefix, in seconds (Anthropic\'s and OpenAI\'s default: 5 minutes; a request with a `"ttl": "1h"` marker, an hour): a conversation that comes back later is logged as a cache miss of that kind' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l hold-memory -d 'What the conversations held for the cache may keep in memory together, in MiB (the one used least recently is forgotten first)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l model -d 'Price every request the log records at this model\'s prices (its billed tokens and the estimate as it came), whatever model its body names: for traffic whose model the table does not know, or that names none. Without it, a request is priced by its body\'s model, and one the table does not know is logged without dollars' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l prices -d 'Add or override models and prices (as `stats --prices`)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l dry-run -d 'Forward every body as it came; log what the recipe would have changed'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -l print-config -d 'Print what the proxy would do (routes, recipe, upstream) and exit'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand serve" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l from -d 'Read the inputs as this format instead of detecting it' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l tokenizer -d 'The tokenizer that counts tokens [default: the one of --model\'s provider when OpenAI\'s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model\'s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l model -d 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM\'s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l prices -d 'Add or override models and prices: a JSON file shaped like LiteLLM\'s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l glob -d 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -s j -l jobs -d 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l recipe -d 'A recipe to replay (the TOML of `ctxclean apply`); or give a chain after `--`' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l compare -d 'More recipes to replay side by side (repeat the flag)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l budget -d 'The budget of the langchain-trim baseline and of --suggest\'s grid, in tokens' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l cache-horizon -d 'As `serve --cache-horizon`: a conversation held is cleaned again when that saves within this many more requests [default: rent or buy]' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l oracle-recall -d 'Also replay the oracle at a recall under 1, a row `oracle 99%`: it may also evict what the model uses again, losing up to 1 - SHARE of each session\'s evidence, where that saves the most reads per string lost (the yardstick for a recipe held to that recall; costs the oracle\'s pass, and a read of each request\'s length). Repeatable: a row per share (the plans share the pass). With --suggest, the suggestion says what share of each one\'s saving the recipe reaches' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l min-recall -d 'The mean recall --suggest requires (a share, 0 to 1; default 0.95)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l min-worst -d 'The recall --suggest requires of the worst session (a share, 0 to 1; default 0.90, or --min-recall when that is lower)' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l save-recipe -d 'Write --suggest\'s recipe into FILE (the table stays on standard output)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l chart -d 'Write a chart as a standalone SVG: each recipe\'s evidence recall against its tokens (the frontier), and the longest session\'s tokens sent per call, a line per recipe' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l write-requests -d 'Write each call\'s request body, as the agent sent it, into DIR (to send them through `ctxclean serve` yourself): one file per input, conversation and call, `STEM-HASH-CONVERSATION-call-NNNN.json`, HASH of the input\'s path as given. DIR must be new or empty' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l forwarded -d 'Account what another proxy (or `ctxclean serve`) forwarded, beside the recipes: NAME is its row, DIR holds the body it forwarded for each call, named as --write-requests names them (send those through it and save what its upstream received under the same names). Priced, checked and searched for evidence by the same rules, `cache_control` markers aside. Repeatable' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l skip-invalid -d 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l hidden -d 'In directories, also take hidden files and folders (names starting with `.`)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l keep-going -d 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file\'s output is not written'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -s q -l quiet -d 'No progress bar'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l json -d 'Print per recipe, and per session, as JSON'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l jsonl -d 'Print one JSON object per recipe per model call'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l suggest -d 'Try a grid of recipes (see above) and write the cheapest that keeps --min-recall of the evidence on average, --min-worst in its worst session, and makes no valid body invalid, as a TOML recipe for `serve --recipe`: alone on standard output (the table then goes to standard error), or into --save-recipe FILE. When none does, says why and exits 1'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l oracle -d 'Also replay the offline optimum, a row `oracle` beside `none`: it knows the future, which no proxy can. It evicts only tool results, and the model\'s own large argument values, whose strings the model uses again only from a later copy if at all, and only when that pays over the calls still to come (costs an extra pass over each session)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -l replace-requests -d 'With --write-requests: DIR may hold files already; the request files of the same names are replaced (regular files only: never a link)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand replay" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand bill" -l svg -d 'Also write a chart of dollars per day (billed, and as the requests came) as a standalone SVG' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand bill" -l by -d 'A row per day and model (`day`), or per conversation (`conversation`: the log\'s `conversation`, one number for every request that continued it, rows in the order each began)' -r -f -a "day\t'A day and model'
conversation\t'A conversation'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand bill" -l model -d 'Price every request at this model\'s prices (its billed tokens; the proxy\'s estimate as they came scaled alike), whatever model it named: for traffic whose model the table does not know. Without it, a request is priced as the proxy priced it, by the model its body named; one it could not price is said to be unpriced' -r
complete -c ctxclean -n "__fish_ctxclean_using_subcommand bill" -l prices -d 'Add or override models and prices (as `stats --prices`)' -r -F
complete -c ctxclean -n "__fish_ctxclean_using_subcommand bill" -l json -d 'Print the report as JSON'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand bill" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand bill" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand completions" -s h -l help -d 'Print help'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand completions" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand man" -s h -l help -d 'Print help'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand man" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand cache-units" -l format -d 'The bodies\' API: `anthropic`, `openai`, `responses` or `gemini`' -r -f -a "openai\t''
anthropic\t''
claude-code\t''
cline\t''
open-webui\t''
librechat\t''
branched\t''
langchain\t''
responses\t''
bedrock\t''
codex\t''
pi\t''
droid\t''
cursor\t''
cursor-ide\t''
continue\t''
zed\t''
amazon-q\t''
opencode\t''
crush\t''
grok-cli\t''
grok-build\t''
qwen-code\t''
kimi-code\t''
goose\t''
letta\t''
openai-agents\t''
openhands\t''
gemini\t''
sharegpt\t''
hf-chat\t''
copilot\t''
copilot-chat\t''
claude-ai\t''
chatgpt\t''
grok\t''
aistudio\t''"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand cache-units" -l tokenizer -d 'The tokenizer that counts' -r -f -a "o200k_base\t'GPT-4o, GPT-4.1, o1, o3 and later'
cl100k_base\t'GPT-4 and GPT-3.5-turbo'
p50k_base\t'Codex, text-davinci-002/003'
r50k_base\t'GPT-3'
approx\t'LangChain\'s estimate: ceil(chars / 4) + 3 per message'"
complete -c ctxclean -n "__fish_ctxclean_using_subcommand cache-units" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand cache-units" -s V -l version -d 'Print version'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "stats" -d 'Count tokens: per conversation, by role, tool and image'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "filter" -d 'Drop what the next model call does not need'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "compact-tools" -d 'Replace heavy tool results with faithful, computed metadata'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "trim" -d 'Fit a token budget, keeping every tool call with its results'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "summarize" -d 'Past a token threshold, replace older turns with a summary'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "validate" -d 'Check that each conversation would be accepted by a provider\'s API'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "convert" -d 'Write transcripts in another format (or the same one, unchanged)'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "apply" -d 'Run a saved chain of steps (a TOML recipe) over the inputs'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "serve" -d 'Clean every request in flight: a proxy in front of an OpenAI-, Anthropic-, Gemini- or Ollama-compatible server'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "replay" -d 'Replay recorded sessions through recipes, call by call, as `serve` would have cleaned them: tokens, dollars with caching, and the evidence the model used next still kept'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "bill" -d 'What the proxy\'s log says was billed: per day and model, requests, billed tokens by kind, dollars, the cache-read share, what the requests as they came would have cost (estimate), cache misses by reason, and billed against counted'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "completions" -d 'Print a shell completion script'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "man" -d 'Print a man page (roff): ctxclean\'s, or a subcommand\'s'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "cache-units" -d 'The units a provider\'s prompt cache sees in each request body read from standard input (one JSON body a line): for `bench/upstream.py`, which bills with ctxclean\'s counts so that its bill, `bill`\'s and `replay`\'s can be compared to the token. A body past 32 MiB (`serve --max-body`\'s default) is refused'
complete -c ctxclean -n "__fish_ctxclean_using_subcommand help; and not __fish_seen_subcommand_from stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
