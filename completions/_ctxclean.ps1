
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'ctxclean' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'ctxclean'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'ctxclean' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('stats', 'stats', [CompletionResultType]::ParameterValue, 'Count tokens: per conversation, by role, tool and image')
            [CompletionResult]::new('filter', 'filter', [CompletionResultType]::ParameterValue, 'Drop what the next model call does not need')
            [CompletionResult]::new('compact-tools', 'compact-tools', [CompletionResultType]::ParameterValue, 'Replace heavy tool results with faithful, computed metadata')
            [CompletionResult]::new('trim', 'trim', [CompletionResultType]::ParameterValue, 'Fit a token budget, keeping every tool call with its results')
            [CompletionResult]::new('summarize', 'summarize', [CompletionResultType]::ParameterValue, 'Past a token threshold, replace older turns with a summary')
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Check that each conversation would be accepted by a provider''s API')
            [CompletionResult]::new('convert', 'convert', [CompletionResultType]::ParameterValue, 'Write transcripts in another format (or the same one, unchanged)')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Run a saved chain of steps (a TOML recipe) over the inputs')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Clean every request in flight: a proxy in front of an OpenAI-, Anthropic-, Gemini- or Ollama-compatible server')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Replay recorded sessions through recipes, call by call, as `serve` would have cleaned them: tokens, dollars with caching, and the evidence the model used next still kept')
            [CompletionResult]::new('bill', 'bill', [CompletionResultType]::ParameterValue, 'What the proxy''s log says was billed: per day and model, requests, billed tokens by kind, dollars, the cache-read share, what the requests as they came would have cost (estimate), cache misses by reason, and billed against counted')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print a man page (roff): ctxclean''s, or a subcommand''s')
            [CompletionResult]::new('cache-units', 'cache-units', [CompletionResultType]::ParameterValue, 'The units a provider''s prompt cache sees in each request body read from standard input (one JSON body a line): for `bench/upstream.py`, which bills with ctxclean''s counts so that its bill, `bill`''s and `replay`''s can be compared to the token. A body past 32 MiB (`serve --max-body`''s default) is refused')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ctxclean;stats' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Read the inputs as this format instead of detecting it')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts tokens [default: the one of --model''s provider when OpenAI''s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model''s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM''s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices: a JSON file shaped like LiteLLM''s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)')
            [CompletionResult]::new('--glob', '--glob', [CompletionResultType]::ParameterName, 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--large-context', '--large-context', [CompletionResultType]::ParameterName, 'Flag conversations over N tokens as needing a large-context model')
            [CompletionResult]::new('--by', '--by', [CompletionResultType]::ParameterName, 'One table per conversation, or per file (summed over its conversations)')
            [CompletionResult]::new('--svg', '--svg', [CompletionResultType]::ParameterName, 'Write the timeline of every conversation as a standalone SVG chart')
            [CompletionResult]::new('--max-tokens', '--max-tokens', [CompletionResultType]::ParameterName, 'The budget of the timeline: its line, and where `trim --max-tokens N` would cut')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output')
            [CompletionResult]::new('--hidden', '--hidden', [CompletionResultType]::ParameterName, 'In directories, also take hidden files and folders (names starting with `.`)')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress bar (and with --jsonl, no total line on standard error)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress bar (and with --jsonl, no total line on standard error)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the report as JSON')
            [CompletionResult]::new('--jsonl', '--jsonl', [CompletionResultType]::ParameterName, 'Print one JSON object per conversation per line, flat and with the same keys and types on every line (for Spark, DuckDB, pandas): source, index, format, tokenizer, messages, tokens, by_role, by_tool, tool calls and results, images, opaque bytes, logged usage. No totals. Schema: schema/stats-row.json')
            [CompletionResult]::new('--per-message', '--per-message', [CompletionResultType]::ParameterName, 'List every message''s tokens')
            [CompletionResult]::new('--tools', '--tools', [CompletionResultType]::ParameterName, 'List every tool call in order, with its arguments and result size')
            [CompletionResult]::new('--timeline', '--timeline', [CompletionResultType]::ParameterName, 'Draw each conversation''s tokens message by message (cumulative), with the --max-tokens budget line and where `trim` would cut')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;filter' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Read the inputs as this format instead of detecting it')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts tokens [default: the one of --model''s provider when OpenAI''s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model''s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM''s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices: a JSON file shaped like LiteLLM''s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)')
            [CompletionResult]::new('--glob', '--glob', [CompletionResultType]::ParameterName, 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--out-dir', '--out-dir', [CompletionResultType]::ParameterName, 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent''s database of several sessions needs it: a file each')
            [CompletionResult]::new('--backup', '--backup', [CompletionResultType]::ParameterName, 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)')
            [CompletionResult]::new('--report-jsonl', '--report-jsonl', [CompletionResultType]::ParameterName, 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file''s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)')
            [CompletionResult]::new('--save-recipe', '--save-recipe', [CompletionResultType]::ParameterName, 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps'' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Keep what agent NAME would have heard in a multi-agent memory: its own replies, `world` messages, human messages addressed to everyone or to it, other agents'' messages that @-mention it at a paragraph start')
            [CompletionResult]::new('--chat-id', '--chat-id', [CompletionResultType]::ParameterName, 'With --agent: keep only messages whose `chatId` is ID')
            [CompletionResult]::new('--supersede', '--supersede', [CompletionResultType]::ParameterName, 'Of calls to TOOL with the same value of argument ARG, keep only the latest (and its result); `TOOL=*` keys on all the arguments, and TOOL alone on none: each call replaces all the earlier ones (a to-do list rewritten whole, as Claude Code''s `TodoWrite`). Repeatable, e.g. `--supersede write_file=path --supersede fetch=url --supersede TodoWrite`')
            [CompletionResult]::new('--keep-thinking-turns', '--keep-thinking-turns', [CompletionResultType]::ParameterName, 'With --drop-thinking: how many of the last assistant turns keep theirs')
            [CompletionResult]::new('--include-roles', '--include-roles', [CompletionResultType]::ParameterName, 'Keep only messages of these roles (comma list; human and ai are aliases)')
            [CompletionResult]::new('--exclude-roles', '--exclude-roles', [CompletionResultType]::ParameterName, 'Drop messages of these roles')
            [CompletionResult]::new('--include-names', '--include-names', [CompletionResultType]::ParameterName, 'Keep only messages with one of these names (case-insensitive)')
            [CompletionResult]::new('--exclude-names', '--exclude-names', [CompletionResultType]::ParameterName, 'Drop messages with one of these names')
            [CompletionResult]::new('--exclude-tools', '--exclude-tools', [CompletionResultType]::ParameterName, 'Drop the calls of these tools and their results')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output')
            [CompletionResult]::new('--hidden', '--hidden', [CompletionResultType]::ParameterName, 'In directories, also take hidden files and folders (names starting with `.`)')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written')
            [CompletionResult]::new('--in-place', '--in-place', [CompletionResultType]::ParameterName, 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express')
            [CompletionResult]::new('--previous-cycles', '--previous-cycles', [CompletionResultType]::ParameterName, 'Before the last user message: drop tool results, strip tool calls from assistant messages that also say something, drop assistant messages that only called tools')
            [CompletionResult]::new('--strip-processed-images', '--strip-processed-images', [CompletionResultType]::ParameterName, 'Replace images an assistant has already answered (before the last user message) with `[image removed: MEDIA_TYPE, N bytes]`')
            [CompletionResult]::new('--dedupe-tool-results', '--dedupe-tool-results', [CompletionResultType]::ParameterName, 'Replace a tool result identical to an earlier result of the same tool with `[same result as message N]`')
            [CompletionResult]::new('--moved-past', '--moved-past', [CompletionResultType]::ParameterName, 'Replace a tool result every distinctive string of which (paths, file names, URLs, identifiers, numbers, quoted strings) appears in a later message with `[tool result of TOOL moved past: …; N bytes]`, and so a call''s large argument values (a Write''s content, an Edit''s strings: `[KEY of this TOOL call moved past: …; N bytes]`, its path and command kept): what they named is still in the conversation, later')
            [CompletionResult]::new('--retried-failures', '--retried-failures', [CompletionResultType]::ParameterName, 'Replace the large argument strings (over 64 bytes of JSON, also inside a MultiEdit''s `edits`) of a call that failed (its result flagged as an error, or reading as one) and was retried (a later call wrote to the same file or page: an Edit again, a Write, a MultiEdit) with `[KEY of this TOOL call, which failed and was retried on the same file; N bytes]`: the content a Write failed to write, the strings of an Edit that did not apply. The call''s path, its short values and the error it got stay; the last attempt on a file stays whole')
            [CompletionResult]::new('--read-again', '--read-again', [CompletionResultType]::ParameterName, 'Replace the large argument strings (over 64 bytes of JSON) of a call that wrote to a file and succeeded, once a later call read that file again whole (a call that names only the file, and did not fail), with `[KEY of this TOOL call: the file was read again later, whole; N bytes]`: what it wrote is in the conversation as the file read then. Its path, its short values and its result stay')
            [CompletionResult]::new('--drop-thinking', '--drop-thinking', [CompletionResultType]::ParameterName, 'Remove thinking and reasoning blocks from assistant turns older than the last --keep-thinking-turns')
            [CompletionResult]::new('--exclude-tool-calls', '--exclude-tool-calls', [CompletionResultType]::ParameterName, 'Drop all tool traffic: results, calls, and assistant messages left empty')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;compact-tools' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Read the inputs as this format instead of detecting it')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts tokens [default: the one of --model''s provider when OpenAI''s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model''s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM''s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices: a JSON file shaped like LiteLLM''s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)')
            [CompletionResult]::new('--glob', '--glob', [CompletionResultType]::ParameterName, 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--out-dir', '--out-dir', [CompletionResultType]::ParameterName, 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent''s database of several sessions needs it: a file each')
            [CompletionResult]::new('--backup', '--backup', [CompletionResultType]::ParameterName, 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)')
            [CompletionResult]::new('--report-jsonl', '--report-jsonl', [CompletionResultType]::ParameterName, 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file''s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)')
            [CompletionResult]::new('--save-recipe', '--save-recipe', [CompletionResultType]::ParameterName, 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps'' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report')
            [CompletionResult]::new('--max-result-tokens', '--max-result-tokens', [CompletionResultType]::ParameterName, 'Compact candidate results larger than N tokens')
            [CompletionResult]::new('--max-total-tokens', '--max-total-tokens', [CompletionResultType]::ParameterName, 'Then compact the oldest remaining candidates, whatever their size, while all tool results together exceed N tokens')
            [CompletionResult]::new('--keep-last', '--keep-last', [CompletionResultType]::ParameterName, 'Never touch the last K results')
            [CompletionResult]::new('--exclude-tools', '--exclude-tools', [CompletionResultType]::ParameterName, 'Never compact these tools'' results (comma list)')
            [CompletionResult]::new('--only-tools', '--only-tools', [CompletionResultType]::ParameterName, 'Compact only these tools'' results (comma list)')
            [CompletionResult]::new('--trigger-tokens', '--trigger-tokens', [CompletionResultType]::ParameterName, 'Do nothing unless the conversation has more than N tokens')
            [CompletionResult]::new('--clear-at-least', '--clear-at-least', [CompletionResultType]::ParameterName, 'Do nothing unless at least N tokens would be saved (clearing breaks prompt caches, so small savings are not worth it)')
            [CompletionResult]::new('--truncate-items', '--truncate-items', [CompletionResultType]::ParameterName, 'In every result, the recent ones too, cut each JSON string value (or the text) longer than CHARS with `…[N chars]`')
            [CompletionResult]::new('--preview-chars', '--preview-chars', [CompletionResultType]::ParameterName, 'How many characters of a text result the description shows')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output')
            [CompletionResult]::new('--hidden', '--hidden', [CompletionResultType]::ParameterName, 'In directories, also take hidden files and folders (names starting with `.`)')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written')
            [CompletionResult]::new('--in-place', '--in-place', [CompletionResultType]::ParameterName, 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express')
            [CompletionResult]::new('--clear-inputs', '--clear-inputs', [CompletionResultType]::ParameterName, 'Also replace large argument values (over 64 characters of JSON) of the compacted results'' calls with "[cleared]"')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;trim' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Read the inputs as this format instead of detecting it')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts tokens [default: the one of --model''s provider when OpenAI''s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model''s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM''s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices: a JSON file shaped like LiteLLM''s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)')
            [CompletionResult]::new('--glob', '--glob', [CompletionResultType]::ParameterName, 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--out-dir', '--out-dir', [CompletionResultType]::ParameterName, 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent''s database of several sessions needs it: a file each')
            [CompletionResult]::new('--backup', '--backup', [CompletionResultType]::ParameterName, 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)')
            [CompletionResult]::new('--report-jsonl', '--report-jsonl', [CompletionResultType]::ParameterName, 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file''s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)')
            [CompletionResult]::new('--save-recipe', '--save-recipe', [CompletionResultType]::ParameterName, 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps'' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report')
            [CompletionResult]::new('--max-tokens', '--max-tokens', [CompletionResultType]::ParameterName, 'The budget: the conversation''s tokens as `stats` counts them with --tokenizer, reply priming included. `context` (the window of --model) or a share of it (`80%`) are budgets too')
            [CompletionResult]::new('--strategy', '--strategy', [CompletionResultType]::ParameterName, 'Keep the end of the conversation (`last`) or its start (`first`)')
            [CompletionResult]::new('--start-on', '--start-on', [CompletionResultType]::ParameterName, 'Drop units from the front of what is kept until one starts with one of these roles (comma list: system, developer, user, assistant, tool, function; human and ai are aliases). Only with `last`')
            [CompletionResult]::new('--end-on', '--end-on', [CompletionResultType]::ParameterName, 'Drop units from the end until one ends with one of these roles')
            [CompletionResult]::new('--max-messages', '--max-messages', [CompletionResultType]::ParameterName, 'Keep at most N messages besides the system message (whole units)')
            [CompletionResult]::new('--max-turns', '--max-turns', [CompletionResultType]::ParameterName, 'Keep the last N user turns (`first`: the first N). A turn starts at a user message and runs to the next one')
            [CompletionResult]::new('--step', '--step', [CompletionResultType]::ParameterName, 'Cut in steps of about N tokens (with `last`): the first message kept is one where the conversation''s running total crosses a multiple of N, and what is kept leaves N tokens of room under the budget. As the conversation grows the cut holds, and what is kept keeps the same start (prompt caches keep hitting), until the room is used up; then a block of about N tokens goes at once. `ctxclean serve` uses half the budget unless given, with checkpoints every N/8 tokens')
            [CompletionResult]::new('--budget-in', '--budget-in', [CompletionResultType]::ParameterName, 'What --max-tokens counts: `counted`, ctxclean''s tokens (--tokenizer); or `billed`, the provider''s input tokens. A billed budget is turned into ctxclean''s with a line fitted on the usage the log recorded per call (billed = fixed + ratio × counted, the fixed part being the system prompt and tools a log does not hold; `stats` shows it); in `serve`, with the ratio learned from the answers of the request''s model (after 5); else with a default: ratio 1.2 for Claude (counted with o200k as a stand-in), 1.0 for the others, no fixed part, said in a warning')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output')
            [CompletionResult]::new('--hidden', '--hidden', [CompletionResultType]::ParameterName, 'In directories, also take hidden files and folders (names starting with `.`)')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written')
            [CompletionResult]::new('--in-place', '--in-place', [CompletionResultType]::ParameterName, 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express')
            [CompletionResult]::new('--no-system', '--no-system', [CompletionResultType]::ParameterName, 'Do not keep the first system message apart: trim it like any other')
            [CompletionResult]::new('--allow-partial', '--allow-partial', [CompletionResultType]::ParameterName, 'Cut the first message that does not fit to the part that does: its last lines with `last`, its first lines with `first`')
            [CompletionResult]::new('--no-placeholder', '--no-placeholder', [CompletionResultType]::ParameterName, 'In formats whose API wants the user first (Anthropic, Claude Code, Claude.ai, Cline, Gemini, AI Studio), drop messages up to a real user message instead of opening the kept messages with a one-line `[Earlier conversation trimmed: N messages, M tokens]` user message')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;summarize' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Read the inputs as this format instead of detecting it')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts tokens [default: the one of --model''s provider when OpenAI''s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model''s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM''s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices: a JSON file shaped like LiteLLM''s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)')
            [CompletionResult]::new('--glob', '--glob', [CompletionResultType]::ParameterName, 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--out-dir', '--out-dir', [CompletionResultType]::ParameterName, 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent''s database of several sessions needs it: a file each')
            [CompletionResult]::new('--backup', '--backup', [CompletionResultType]::ParameterName, 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)')
            [CompletionResult]::new('--report-jsonl', '--report-jsonl', [CompletionResultType]::ParameterName, 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file''s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)')
            [CompletionResult]::new('--save-recipe', '--save-recipe', [CompletionResultType]::ParameterName, 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps'' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report')
            [CompletionResult]::new('--threshold', '--threshold', [CompletionResultType]::ParameterName, 'Summarize conversations over N tokens (as `stats` counts them); smaller ones pass through unchanged')
            [CompletionResult]::new('--budget-in', '--budget-in', [CompletionResultType]::ParameterName, 'What --threshold counts: `counted`, ctxclean''s tokens; or `billed`, the provider''s input tokens, read as `trim --budget-in` reads them')
            [CompletionResult]::new('--keep', '--keep', [CompletionResultType]::ParameterName, 'Keep the last N messages verbatim')
            [CompletionResult]::new('--min-keep', '--min-keep', [CompletionResultType]::ParameterName, 'When nothing older than the last --keep messages is left to summarize, halve --keep down to N')
            [CompletionResult]::new('--engine', '--engine', [CompletionResultType]::ParameterName, 'Who writes the summary')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'The server''s base URL [default: http://localhost:11434 for ollama, https://api.openai.com/v1 for openai]')
            [CompletionResult]::new('--engine-model', '--engine-model', [CompletionResultType]::ParameterName, 'The summarizer''s model [default: llama3.2 for ollama, gpt-4o-mini for openai]. (`--model` names the model the transcript goes to, as for every command.)')
            [CompletionResult]::new('--api-key-env', '--api-key-env', [CompletionResultType]::ParameterName, 'The environment variable holding the API key for `openai` (sent as a bearer token; no header when it is unset, for local servers)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Give up on one request after SECS seconds (it is retried twice)')
            [CompletionResult]::new('--prompt-file', '--prompt-file', [CompletionResultType]::ParameterName, 'Replace the default summary prompt with the text of FILE (`{max_tokens}` in it is replaced by --max-summary-tokens)')
            [CompletionResult]::new('--max-summary-tokens', '--max-summary-tokens', [CompletionResultType]::ParameterName, 'The summary''s budget in tokens')
            [CompletionResult]::new('--max-input-tokens', '--max-input-tokens', [CompletionResultType]::ParameterName, 'The most tokens a model is sent; the middle of a longer input is cut with a marker')
            [CompletionResult]::new('--engine-context', '--engine-context', [CompletionResultType]::ParameterName, 'The summarizing model''s context window in tokens (a local model''s is often 2,048–8,192): each request is made to fit it, the older messages summarized in chunks folded into one summary, the summary''s budget at most an eighth of the window; told to Ollama as `num_ctx`. Unset, a server that refuses a request for its length and names its window is asked again within it, and the run''s later conversations within it at once')
            [CompletionResult]::new('--placement', '--placement', [CompletionResultType]::ParameterName, 'The summary message''s role: `system`, or `user` for APIs that take a single system message')
            [CompletionResult]::new('--on-failure', '--on-failure', [CompletionResultType]::ParameterName, 'When no summary can be made (the server is down, times out, answers with an error): `truncate` drops the older messages with a one-line note saying how many (the reason on standard error and in the report); `keep` leaves the conversation as it was; `fail` exits 1 and writes nothing for that input. [default: truncate; keep with --in-place and no --backup]')
            [CompletionResult]::new('--cache', '--cache', [CompletionResultType]::ParameterName, 'Keep summaries in DIR: a rerun makes no request, and a grown transcript only adds its new older messages to the cached summary')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output')
            [CompletionResult]::new('--hidden', '--hidden', [CompletionResultType]::ParameterName, 'In directories, also take hidden files and folders (names starting with `.`)')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written')
            [CompletionResult]::new('--in-place', '--in-place', [CompletionResultType]::ParameterName, 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;validate' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Read the inputs as this format instead of detecting it')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts tokens [default: the one of --model''s provider when OpenAI''s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model''s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM''s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices: a JSON file shaped like LiteLLM''s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)')
            [CompletionResult]::new('--glob', '--glob', [CompletionResultType]::ParameterName, 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--provider', '--provider', [CompletionResultType]::ParameterName, 'The API to check against [default: the one of the input''s format: anthropic for Anthropic, Claude Code and Claude.ai transcripts, gemini for Gemini and AI Studio, responses for Responses and Codex, openai otherwise]')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output')
            [CompletionResult]::new('--hidden', '--hidden', [CompletionResultType]::ParameterName, 'In directories, also take hidden files and folders (names starting with `.`)')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the problems: no count on standard error, no progress bar')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the problems: no count on standard error, no progress bar')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the problems as JSON')
            [CompletionResult]::new('--request', '--request', [CompletionResultType]::ParameterName, 'Check each conversation as a request about to be sent, which must keep rules a transcript at rest need not: OpenAI chat''s tool calls all answered (the cycle at the end too), a Responses reasoning item followed by the item it produced, and with Anthropic''s thinking on, the assistant turn in progress starting with its thinking')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;convert' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Read the inputs as this format instead of detecting it')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts tokens [default: the one of --model''s provider when OpenAI''s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model''s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM''s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices: a JSON file shaped like LiteLLM''s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)')
            [CompletionResult]::new('--glob', '--glob', [CompletionResultType]::ParameterName, 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--out-dir', '--out-dir', [CompletionResultType]::ParameterName, 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent''s database of several sessions needs it: a file each')
            [CompletionResult]::new('--backup', '--backup', [CompletionResultType]::ParameterName, 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)')
            [CompletionResult]::new('--report-jsonl', '--report-jsonl', [CompletionResultType]::ParameterName, 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file''s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)')
            [CompletionResult]::new('--save-recipe', '--save-recipe', [CompletionResultType]::ParameterName, 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps'' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output')
            [CompletionResult]::new('--hidden', '--hidden', [CompletionResultType]::ParameterName, 'In directories, also take hidden files and folders (names starting with `.`)')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written')
            [CompletionResult]::new('--in-place', '--in-place', [CompletionResultType]::ParameterName, 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;apply' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Read the inputs as this format instead of detecting it')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts tokens [default: the one of --model''s provider when OpenAI''s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model''s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM''s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices: a JSON file shaped like LiteLLM''s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)')
            [CompletionResult]::new('--glob', '--glob', [CompletionResultType]::ParameterName, 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly')
            [CompletionResult]::new('--out-dir', '--out-dir', [CompletionResultType]::ParameterName, 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME). An agent''s database of several sessions needs it: a file each')
            [CompletionResult]::new('--backup', '--backup', [CompletionResultType]::ParameterName, 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file; a name taken already moves it to INPUT+SUFFIX.1, .2, …, never over it)')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write a JSON report to PATH (`-`: standard error): tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never a file the run reads (an input, the recipe, --prices) or writes (the output, a backup, another report)')
            [CompletionResult]::new('--report-jsonl', '--report-jsonl', [CompletionResultType]::ParameterName, 'Write one JSON line per conversation to PATH as the run goes (`-`: standard error): command, source, index, format, tokens and messages before and after, counts of messages removed, modified and added, and the changes. A file''s rows are written when it is done, none for a file that fails. For collecting the reports of many runs (Spark)')
            [CompletionResult]::new('--save-recipe', '--save-recipe', [CompletionResultType]::ParameterName, 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it: the steps'' flags, with --model, --to, --strict, --from, --tokenizer and --skip-invalid (not the inputs, nor where output goes, which a recipe may not hold)')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report')
            [CompletionResult]::new('--print-chain', '--print-chain', [CompletionResultType]::ParameterName, 'Print the chain the recipe runs, as a command line, and exit')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output')
            [CompletionResult]::new('--hidden', '--hidden', [CompletionResultType]::ParameterName, 'In directories, also take hidden files and folders (names starting with `.`)')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written')
            [CompletionResult]::new('--in-place', '--in-place', [CompletionResultType]::ParameterName, 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, that another process holds open for writing, or that another run is rewriting, is left alone (lines appended while it is being replaced are added to its end); on any error the input is untouched')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Do not print the summary line on standard error (what was lost, notes and warnings are still said)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Count every conversation''s tokens before and after for the summary line (`1,643 → 977 tokens`; per step in a chain), as --report does. Without it the line counts only the messages that changed (`−666 tokens`), which costs next to nothing')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;serve' {
            [CompletionResult]::new('--upstream', '--upstream', [CompletionResultType]::ParameterName, 'The server requests go to: `http://HOST:PORT` or `https://HOST`, with a path prefix if it has one (`https://openrouter.ai/api`)')
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Where to listen. A non-loopback address is allowed, with a warning: the proxy forwards its callers'' credentials')
            [CompletionResult]::new('--recipe', '--recipe', [CompletionResultType]::ParameterName, 'The recipe (the TOML of `ctxclean apply`); or give a chain after `--`')
            [CompletionResult]::new('--max-body', '--max-body', [CompletionResultType]::ParameterName, 'Bodies larger than this are refused (413)')
            [CompletionResult]::new('--max-connections', '--max-connections', [CompletionResultType]::ParameterName, 'Requests served at once (a request holds its slot from its whole body to its answer''s end; an idle connection, or one still sending the body of a route that is cleaned, holds none); more wait. /healthz and /metrics are answered even when every slot is taken. Open connections are bounded at four times this, within the open-files limit: its soft limit is raised as far as that needs (one more file for the upstream connection of each request served, and 64 aside), and under a hard limit too low the bound is lowered, said at start. At most 1,000,000')
            [CompletionResult]::new('--header-timeout', '--header-timeout', [CompletionResultType]::ParameterName, 'Seconds a client has to send a request''s headers, and that a kept-alive connection may wait idle for its next request; then it is closed')
            [CompletionResult]::new('--body-timeout', '--body-timeout', [CompletionResultType]::ParameterName, 'Seconds a request body may go without sending anything, or may take before it must have come at 1 KiB/s on average: then it is answered 408 (in the provider''s error shape) and its memory freed. Bodies being read share a budget of four times --max-body; past it a new body gets 503. A client that takes nothing of its answer for as long is let go (its connection closed, its slot freed)')
            [CompletionResult]::new('--clean-timeout', '--clean-timeout', [CompletionResultType]::ParameterName, 'Seconds the cleaning of one request may take, summaries included: past it the body goes on as it came, said in the log (a summarizer that does not answer never holds a request longer). Cleanings run one per core, or four per core when the recipe summarizes; the wait for a free one counts')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Seconds to connect to the upstream')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Seconds to wait for the upstream''s answer to begin (504 after), and, once it streams, for each next piece of it (cut off after: the client has what came, and the log says why)')
            [CompletionResult]::new('--log', '--log', [CompletionResultType]::ParameterName, 'The request log (one JSON line per request); standard error if not given. Written by a thread of its own: a log that does not keep up holds no request; the lines it loses are said and counted')
            [CompletionResult]::new('--cache-horizon', '--cache-horizon', [CompletionResultType]::ParameterName, 'A conversation that comes back longer goes on as it went last time with the new messages appended (the provider''s prompt cache serves all of it) until it passes the budget of the recipe''s `trim`, or cleaning it again has paid for itself: by default once the reads of what the recipe would take out, added up request by request, reach the cache write that cleaning again costs (rent or buy); with this flag, when it costs less within this many more requests. 0: no request costs more than holding would')
            [CompletionResult]::new('--cache-lifetime', '--cache-lifetime', [CompletionResultType]::ParameterName, 'How long the provider''s prompt cache keeps a prefix, in seconds (Anthropic''s and OpenAI''s default: 5 minutes; a request with a `"ttl": "1h"` marker, an hour): a conversation that comes back later is logged as a cache miss of that kind')
            [CompletionResult]::new('--hold-memory', '--hold-memory', [CompletionResultType]::ParameterName, 'What the conversations held for the cache may keep in memory together, in MiB (the one used least recently is forgotten first)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Price every request the log records at this model''s prices (its billed tokens and the estimate as it came), whatever model its body names: for traffic whose model the table does not know, or that names none. Without it, a request is priced by its body''s model, and one the table does not know is logged without dollars')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices (as `stats --prices`)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Forward every body as it came; log what the recipe would have changed')
            [CompletionResult]::new('--print-config', '--print-config', [CompletionResultType]::ParameterName, 'Print what the proxy would do (routes, recipe, upstream) and exit')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;replay' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Read the inputs as this format instead of detecting it')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts tokens [default: the one of --model''s provider when OpenAI''s, else o200k_base]: o200k_base, cl100k_base, p50k_base, r50k_base, approx, or `hf:PATH`: a Hugging Face `tokenizer.json` (a local model''s), with the per-message tokens of its chat template (ChatML, Llama 3) when its vocabulary tells which')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model the transcript goes to: its context window (the routing hint of `stats`), its prices (dollars in `stats` and in summary lines) and, for OpenAI models, its tokenizer. From a snapshot of LiteLLM''s model table; provider prefixes and dated suffixes are tolerated (`claude-sonnet-4-5-20250929`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices: a JSON file shaped like LiteLLM''s `model_prices_and_context_window.json`, or TOML `[models.NAME]` tables (provider, max_input_tokens, input, output, cache_write, cache_read: USD per token)')
            [CompletionResult]::new('--glob', '--glob', [CompletionResultType]::ParameterName, 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]. A walk reads regular files and links to them; a FIFO or a device it matches, a broken link, a link to a directory are passed over and said')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order')
            [CompletionResult]::new('--recipe', '--recipe', [CompletionResultType]::ParameterName, 'A recipe to replay (the TOML of `ctxclean apply`); or give a chain after `--`')
            [CompletionResult]::new('--compare', '--compare', [CompletionResultType]::ParameterName, 'More recipes to replay side by side (repeat the flag)')
            [CompletionResult]::new('--budget', '--budget', [CompletionResultType]::ParameterName, 'The budget of the langchain-trim baseline and of --suggest''s grid, in tokens')
            [CompletionResult]::new('--cache-horizon', '--cache-horizon', [CompletionResultType]::ParameterName, 'As `serve --cache-horizon`: a conversation held is cleaned again when that saves within this many more requests [default: rent or buy]')
            [CompletionResult]::new('--oracle-recall', '--oracle-recall', [CompletionResultType]::ParameterName, 'Also replay the oracle at a recall under 1, a row `oracle 99%`: it may also evict what the model uses again, losing up to 1 - SHARE of each session''s evidence, where that saves the most reads per string lost (the yardstick for a recipe held to that recall; costs the oracle''s pass, and a read of each request''s length). Repeatable: a row per share (the plans share the pass). With --suggest, the suggestion says what share of each one''s saving the recipe reaches')
            [CompletionResult]::new('--min-recall', '--min-recall', [CompletionResultType]::ParameterName, 'The mean recall --suggest requires (a share, 0 to 1; default 0.95)')
            [CompletionResult]::new('--min-worst', '--min-worst', [CompletionResultType]::ParameterName, 'The recall --suggest requires of the worst session (a share, 0 to 1; default 0.90, or --min-recall when that is lower)')
            [CompletionResult]::new('--save-recipe', '--save-recipe', [CompletionResultType]::ParameterName, 'Write --suggest''s recipe into FILE (the table stays on standard output)')
            [CompletionResult]::new('--chart', '--chart', [CompletionResultType]::ParameterName, 'Write a chart as a standalone SVG: each recipe''s evidence recall against its tokens (the frontier), and the longest session''s tokens sent per call, a line per recipe')
            [CompletionResult]::new('--write-requests', '--write-requests', [CompletionResultType]::ParameterName, 'Write each call''s request body, as the agent sent it, into DIR (to send them through `ctxclean serve` yourself): one file per input, conversation and call, `STEM-HASH-CONVERSATION-call-NNNN.json`, HASH of the input''s path as given. DIR must be new or empty')
            [CompletionResult]::new('--forwarded', '--forwarded', [CompletionResultType]::ParameterName, 'Account what another proxy (or `ctxclean serve`) forwarded, beside the recipes: NAME is its row, DIR holds the body it forwarded for each call, named as --write-requests names them (send those through it and save what its upstream received under the same names). Priced, checked and searched for evidence by the same rules, `cache_control` markers aside. Repeatable')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output')
            [CompletionResult]::new('--hidden', '--hidden', [CompletionResultType]::ParameterName, 'In directories, also take hidden files and folders (names starting with `.`)')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress bar')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress bar')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print per recipe, and per session, as JSON')
            [CompletionResult]::new('--jsonl', '--jsonl', [CompletionResultType]::ParameterName, 'Print one JSON object per recipe per model call')
            [CompletionResult]::new('--suggest', '--suggest', [CompletionResultType]::ParameterName, 'Try a grid of recipes (see above) and write the cheapest that keeps --min-recall of the evidence on average, --min-worst in its worst session, and makes no valid body invalid, as a TOML recipe for `serve --recipe`: alone on standard output (the table then goes to standard error), or into --save-recipe FILE. When none does, says why and exits 1')
            [CompletionResult]::new('--oracle', '--oracle', [CompletionResultType]::ParameterName, 'Also replay the offline optimum, a row `oracle` beside `none`: it knows the future, which no proxy can. It evicts only tool results, and the model''s own large argument values, whose strings the model uses again only from a later copy if at all, and only when that pays over the calls still to come (costs an extra pass over each session)')
            [CompletionResult]::new('--replace-requests', '--replace-requests', [CompletionResultType]::ParameterName, 'With --write-requests: DIR may hold files already; the request files of the same names are replaced (regular files only: never a link)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;bill' {
            [CompletionResult]::new('--svg', '--svg', [CompletionResultType]::ParameterName, 'Also write a chart of dollars per day (billed, and as the requests came) as a standalone SVG')
            [CompletionResult]::new('--by', '--by', [CompletionResultType]::ParameterName, 'A row per day and model (`day`), or per conversation (`conversation`: the log''s `conversation`, one number for every request that continued it, rows in the order each began)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Price every request at this model''s prices (its billed tokens; the proxy''s estimate as they came scaled alike), whatever model it named: for traffic whose model the table does not know. Without it, a request is priced as the proxy priced it, by the model its body named; one it could not price is said to be unpriced')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Add or override models and prices (as `stats --prices`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the report as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;completions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;man' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;cache-units' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'The bodies'' API: `anthropic`, `openai`, `responses` or `gemini`')
            [CompletionResult]::new('--tokenizer', '--tokenizer', [CompletionResultType]::ParameterName, 'The tokenizer that counts')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ctxclean;help' {
            [CompletionResult]::new('stats', 'stats', [CompletionResultType]::ParameterValue, 'Count tokens: per conversation, by role, tool and image')
            [CompletionResult]::new('filter', 'filter', [CompletionResultType]::ParameterValue, 'Drop what the next model call does not need')
            [CompletionResult]::new('compact-tools', 'compact-tools', [CompletionResultType]::ParameterValue, 'Replace heavy tool results with faithful, computed metadata')
            [CompletionResult]::new('trim', 'trim', [CompletionResultType]::ParameterValue, 'Fit a token budget, keeping every tool call with its results')
            [CompletionResult]::new('summarize', 'summarize', [CompletionResultType]::ParameterValue, 'Past a token threshold, replace older turns with a summary')
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Check that each conversation would be accepted by a provider''s API')
            [CompletionResult]::new('convert', 'convert', [CompletionResultType]::ParameterValue, 'Write transcripts in another format (or the same one, unchanged)')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Run a saved chain of steps (a TOML recipe) over the inputs')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Clean every request in flight: a proxy in front of an OpenAI-, Anthropic-, Gemini- or Ollama-compatible server')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Replay recorded sessions through recipes, call by call, as `serve` would have cleaned them: tokens, dollars with caching, and the evidence the model used next still kept')
            [CompletionResult]::new('bill', 'bill', [CompletionResultType]::ParameterValue, 'What the proxy''s log says was billed: per day and model, requests, billed tokens by kind, dollars, the cache-read share, what the requests as they came would have cost (estimate), cache misses by reason, and billed against counted')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print a man page (roff): ctxclean''s, or a subcommand''s')
            [CompletionResult]::new('cache-units', 'cache-units', [CompletionResultType]::ParameterValue, 'The units a provider''s prompt cache sees in each request body read from standard input (one JSON body a line): for `bench/upstream.py`, which bills with ctxclean''s counts so that its bill, `bill`''s and `replay`''s can be compared to the token. A body past 32 MiB (`serve --max-body`''s default) is refused')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ctxclean;help;stats' {
            break
        }
        'ctxclean;help;filter' {
            break
        }
        'ctxclean;help;compact-tools' {
            break
        }
        'ctxclean;help;trim' {
            break
        }
        'ctxclean;help;summarize' {
            break
        }
        'ctxclean;help;validate' {
            break
        }
        'ctxclean;help;convert' {
            break
        }
        'ctxclean;help;apply' {
            break
        }
        'ctxclean;help;serve' {
            break
        }
        'ctxclean;help;replay' {
            break
        }
        'ctxclean;help;bill' {
            break
        }
        'ctxclean;help;completions' {
            break
        }
        'ctxclean;help;man' {
            break
        }
        'ctxclean;help;cache-units' {
            break
        }
        'ctxclean;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
