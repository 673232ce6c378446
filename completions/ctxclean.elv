
use builtin;
use str;

set edit:completion:arg-completer[ctxclean] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'ctxclean'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'ctxclean'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand stats 'Count tokens: per conversation, by role, tool and image'
            cand filter 'Drop what the next model call does not need'
            cand compact-tools 'Replace heavy tool results with faithful, computed metadata'
            cand trim 'Fit a token budget, keeping every tool call with its results'
            cand summarize 'Past a token threshold, replace older turns with a summary'
            cand validate 'Check that each conversation would be accepted by a provider''s API'
            cand convert 'Write transcripts in another format (or the same one, unchanged)'
            cand apply 'Run a saved chain of steps (a TOML recipe) over the inputs'
            cand completions 'Print a shell completion script'
            cand man 'Print a man page (roff): ctxclean''s, or a subcommand''s'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ctxclean;stats'= {
            cand --from 'Read the inputs as this format instead of detecting it'
            cand --tokenizer 'The tokenizer that counts tokens'
            cand --glob 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]'
            cand -j 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --jobs 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --large-context 'Flag conversations over N tokens as needing a large-context model'
            cand --by 'One table per conversation, or per file (summed over its conversations)'
            cand --skip-invalid 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
            cand --hidden 'In directories, also take hidden files and folders (names starting with `.`)'
            cand --keep-going 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written'
            cand -q 'No progress bar'
            cand --quiet 'No progress bar'
            cand --json 'Print the report as JSON'
            cand --per-message 'List every message''s tokens'
            cand --tools 'List every tool call in order, with its arguments and result size'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;filter'= {
            cand --from 'Read the inputs as this format instead of detecting it'
            cand --tokenizer 'The tokenizer that counts tokens'
            cand --glob 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]'
            cand -j 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --jobs 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand -o 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --output 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --out-dir 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME)'
            cand --backup 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file)'
            cand --report 'Write a JSON report to PATH: tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never an input or the -o output'
            cand --save-recipe 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it'
            cand --to 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report'
            cand --agent 'Keep what agent NAME would have heard in a multi-agent memory: its own replies, `world` messages, human messages addressed to everyone or to it, other agents'' messages that @-mention it at a paragraph start'
            cand --chat-id 'With --agent: keep only messages whose `chatId` is ID'
            cand --supersede 'Of calls to TOOL with the same value of argument ARG, keep only the latest (and its result); `TOOL=*` keys on all the arguments. Repeatable, e.g. `--supersede write_file=path --supersede fetch=url`'
            cand --keep-thinking-turns 'With --drop-thinking: how many of the last assistant turns keep theirs'
            cand --include-roles 'Keep only messages of these roles (comma list; human and ai are aliases)'
            cand --exclude-roles 'Drop messages of these roles'
            cand --include-names 'Keep only messages with one of these names (case-insensitive)'
            cand --exclude-names 'Drop messages with one of these names'
            cand --exclude-tools 'Drop the calls of these tools and their results'
            cand --skip-invalid 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
            cand --hidden 'In directories, also take hidden files and folders (names starting with `.`)'
            cand --keep-going 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written'
            cand --in-place 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, or that another run is rewriting, is left alone; on any error the input is untouched'
            cand -q 'Do not print the summary line on standard error'
            cand --quiet 'Do not print the summary line on standard error'
            cand --strict 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
            cand --previous-cycles 'Before the last user message: drop tool results, strip tool calls from assistant messages that also say something, drop assistant messages that only called tools'
            cand --strip-processed-images 'Replace images an assistant has already answered (before the last user message) with `[image removed: MEDIA_TYPE, N bytes]`'
            cand --dedupe-tool-results 'Replace a tool result identical to an earlier result of the same tool with `[same result as message N]`'
            cand --drop-thinking 'Remove thinking and reasoning blocks from assistant turns older than the last --keep-thinking-turns'
            cand --exclude-tool-calls 'Drop all tool traffic: results, calls, and assistant messages left empty'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;compact-tools'= {
            cand --from 'Read the inputs as this format instead of detecting it'
            cand --tokenizer 'The tokenizer that counts tokens'
            cand --glob 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]'
            cand -j 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --jobs 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand -o 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --output 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --out-dir 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME)'
            cand --backup 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file)'
            cand --report 'Write a JSON report to PATH: tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never an input or the -o output'
            cand --save-recipe 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it'
            cand --to 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report'
            cand --max-result-tokens 'Compact candidate results larger than N tokens'
            cand --max-total-tokens 'Then compact the oldest remaining candidates, whatever their size, while all tool results together exceed N tokens'
            cand --keep-last 'Never touch the last K results'
            cand --exclude-tools 'Never compact these tools'' results (comma list)'
            cand --only-tools 'Compact only these tools'' results (comma list)'
            cand --trigger-tokens 'Do nothing unless the conversation has more than N tokens'
            cand --clear-at-least 'Do nothing unless at least N tokens would be saved (clearing breaks prompt caches, so small savings are not worth it)'
            cand --truncate-items 'In every result, the recent ones too, cut each JSON string value (or the text) longer than CHARS with `…[N chars]`'
            cand --preview-chars 'How many characters of a text result the description shows'
            cand --skip-invalid 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
            cand --hidden 'In directories, also take hidden files and folders (names starting with `.`)'
            cand --keep-going 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written'
            cand --in-place 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, or that another run is rewriting, is left alone; on any error the input is untouched'
            cand -q 'Do not print the summary line on standard error'
            cand --quiet 'Do not print the summary line on standard error'
            cand --strict 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
            cand --clear-inputs 'Also replace large argument values (over 64 characters of JSON) of the compacted results'' calls with "[cleared]"'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;trim'= {
            cand --from 'Read the inputs as this format instead of detecting it'
            cand --tokenizer 'The tokenizer that counts tokens'
            cand --glob 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]'
            cand -j 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --jobs 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand -o 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --output 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --out-dir 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME)'
            cand --backup 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file)'
            cand --report 'Write a JSON report to PATH: tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never an input or the -o output'
            cand --save-recipe 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it'
            cand --to 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report'
            cand --max-tokens 'The budget: the conversation''s tokens as `stats` counts them with --tokenizer, reply priming included'
            cand --strategy 'Keep the end of the conversation (`last`) or its start (`first`)'
            cand --start-on 'Drop units from the front of what is kept until one starts with one of these roles (comma list: system, developer, user, assistant, tool, function; human and ai are aliases). Only with `last`'
            cand --end-on 'Drop units from the end until one ends with one of these roles'
            cand --max-messages 'Keep at most N messages besides the system message (whole units)'
            cand --max-turns 'Keep the last N user turns (`first`: the first N). A turn starts at a user message and runs to the next one'
            cand --skip-invalid 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
            cand --hidden 'In directories, also take hidden files and folders (names starting with `.`)'
            cand --keep-going 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written'
            cand --in-place 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, or that another run is rewriting, is left alone; on any error the input is untouched'
            cand -q 'Do not print the summary line on standard error'
            cand --quiet 'Do not print the summary line on standard error'
            cand --strict 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
            cand --no-system 'Do not keep the first system message apart: trim it like any other'
            cand --allow-partial 'Cut the first message that does not fit to the part that does: its last lines with `last`, its first lines with `first`'
            cand --no-placeholder 'In formats whose API wants the user first (Anthropic, Claude Code, Claude.ai, Cline, Gemini, AI Studio), drop messages up to a real user message instead of opening the kept messages with a one-line `[Earlier conversation trimmed: N messages, M tokens]` user message'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;summarize'= {
            cand --from 'Read the inputs as this format instead of detecting it'
            cand --tokenizer 'The tokenizer that counts tokens'
            cand --glob 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]'
            cand -j 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --jobs 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand -o 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --output 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --out-dir 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME)'
            cand --backup 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file)'
            cand --report 'Write a JSON report to PATH: tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never an input or the -o output'
            cand --save-recipe 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it'
            cand --to 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report'
            cand --threshold 'Summarize conversations over N tokens (as `stats` counts them); smaller ones pass through unchanged'
            cand --keep 'Keep the last N messages verbatim'
            cand --min-keep 'When nothing older than the last --keep messages is left to summarize, halve --keep down to N'
            cand --engine 'Who writes the summary'
            cand --url 'The server''s base URL [default: http://localhost:11434 for ollama, https://api.openai.com/v1 for openai]'
            cand --model 'The model [default: llama3.2 for ollama, gpt-4o-mini for openai]'
            cand --api-key-env 'The environment variable holding the API key for `openai` (sent as a bearer token; no header when it is unset, for local servers)'
            cand --timeout 'Give up on one request after SECS seconds (it is retried twice)'
            cand --prompt-file 'Replace the default summary prompt with the text of FILE (`{max_tokens}` in it is replaced by --max-summary-tokens)'
            cand --max-summary-tokens 'The summary''s budget in tokens'
            cand --max-input-tokens 'The most tokens a model is sent; the middle of a longer input is cut with a marker'
            cand --placement 'The summary message''s role: `system`, or `user` for APIs that take a single system message'
            cand --on-failure 'When no summary can be made (the server is down, times out, answers with an error): `truncate` drops the older messages with a one-line note saying why; `keep` leaves the conversation as it was; `fail` exits 1 and writes nothing for that input. [default: truncate; keep with --in-place and no --backup]'
            cand --cache 'Keep summaries in DIR: a rerun makes no request, and a grown transcript only adds its new older messages to the cached summary'
            cand --skip-invalid 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
            cand --hidden 'In directories, also take hidden files and folders (names starting with `.`)'
            cand --keep-going 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written'
            cand --in-place 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, or that another run is rewriting, is left alone; on any error the input is untouched'
            cand -q 'Do not print the summary line on standard error'
            cand --quiet 'Do not print the summary line on standard error'
            cand --strict 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;validate'= {
            cand --from 'Read the inputs as this format instead of detecting it'
            cand --tokenizer 'The tokenizer that counts tokens'
            cand --glob 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]'
            cand -j 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --jobs 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --provider 'The API to check against [default: the one of the input''s format: anthropic for Anthropic, Claude Code and Claude.ai transcripts, gemini for Gemini and AI Studio, responses for Responses and Codex, openai otherwise]'
            cand --skip-invalid 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
            cand --hidden 'In directories, also take hidden files and folders (names starting with `.`)'
            cand --keep-going 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written'
            cand -q 'Print only the problems: no count on standard error, no progress bar'
            cand --quiet 'Print only the problems: no count on standard error, no progress bar'
            cand --json 'Print the problems as JSON'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;convert'= {
            cand --from 'Read the inputs as this format instead of detecting it'
            cand --tokenizer 'The tokenizer that counts tokens'
            cand --glob 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]'
            cand -j 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --jobs 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand -o 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --output 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --out-dir 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME)'
            cand --backup 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file)'
            cand --report 'Write a JSON report to PATH: tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never an input or the -o output'
            cand --save-recipe 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it'
            cand --to 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report'
            cand --skip-invalid 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
            cand --hidden 'In directories, also take hidden files and folders (names starting with `.`)'
            cand --keep-going 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written'
            cand --in-place 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, or that another run is rewriting, is left alone; on any error the input is untouched'
            cand -q 'Do not print the summary line on standard error'
            cand --quiet 'Do not print the summary line on standard error'
            cand --strict 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;apply'= {
            cand --from 'Read the inputs as this format instead of detecting it'
            cand --tokenizer 'The tokenizer that counts tokens'
            cand --glob 'In directories, take files whose name matches PATTERN (`*`, `?`, `[a-z]`, `{a,b}`; with a `/`, matched against the path below the directory, `**` crossing folders). Repeatable. [default: *.json, *.jsonl]'
            cand -j 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand --jobs 'Process N files, and chunks of one-conversation-per-line JSONL files, in parallel [default: the number of cores]. Output order is input order'
            cand -o 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --output 'Write the transcript to PATH instead of standard output. A regular file is written whole to a temporary file beside it, then renamed into place; a FIFO, a device or a pipe (/dev/stdout) is written directly'
            cand --out-dir 'Write each input''s output to DIR, mirroring the paths of files found in directories (a file given by name goes to DIR/NAME)'
            cand --backup 'With --in-place, keep each input''s previous content at INPUT+SUFFIX (a non-empty suffix, e.g. .bak; no backup of an unchanged file)'
            cand --report 'Write a JSON report to PATH: tokens before and after per conversation, and every message removed, modified or added, with the reason. PATH may be a FIFO or /dev/stdout; never an input or the -o output'
            cand --save-recipe 'Write the steps of this command (or chain) to FILE as a recipe for `ctxclean apply`, then run it'
            cand --to 'Write the transcript in this request format (default: the input''s format): openai, anthropic, responses, gemini, langchain, sharegpt or hf-chat, one request body per conversation. Log and export formats are written only from their own kind. What the target cannot express is a loss: counted on standard error, listed in the report'
            cand --print-chain 'Print the chain the recipe runs, as a command line, and exit'
            cand --skip-invalid 'Skip blank, comment (`//`) and malformed JSONL lines instead of failing; they are counted in the report and kept in place in the output'
            cand --hidden 'In directories, also take hidden files and folders (names starting with `.`)'
            cand --keep-going 'When a file fails, report it, skip it and go on with the others; exit 1 at the end with the list of failures. Without it the run stops at the first error, and the failing file''s output is not written'
            cand --in-place 'Write each input''s output back over it: a temporary file beside it, flushed, synced and renamed (owner and mode kept). Regular files only; a file that did not change is not rewritten; a file that changes while it is processed, or that another run is rewriting, is left alone; on any error the input is untouched'
            cand -q 'Do not print the summary line on standard error'
            cand --quiet 'Do not print the summary line on standard error'
            cand --strict 'With --to, fail (exit 1, nothing written for that input) instead of losing anything the target cannot express'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;completions'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;man'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ctxclean;help'= {
            cand stats 'Count tokens: per conversation, by role, tool and image'
            cand filter 'Drop what the next model call does not need'
            cand compact-tools 'Replace heavy tool results with faithful, computed metadata'
            cand trim 'Fit a token budget, keeping every tool call with its results'
            cand summarize 'Past a token threshold, replace older turns with a summary'
            cand validate 'Check that each conversation would be accepted by a provider''s API'
            cand convert 'Write transcripts in another format (or the same one, unchanged)'
            cand apply 'Run a saved chain of steps (a TOML recipe) over the inputs'
            cand completions 'Print a shell completion script'
            cand man 'Print a man page (roff): ctxclean''s, or a subcommand''s'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ctxclean;help;stats'= {
        }
        &'ctxclean;help;filter'= {
        }
        &'ctxclean;help;compact-tools'= {
        }
        &'ctxclean;help;trim'= {
        }
        &'ctxclean;help;summarize'= {
        }
        &'ctxclean;help;validate'= {
        }
        &'ctxclean;help;convert'= {
        }
        &'ctxclean;help;apply'= {
        }
        &'ctxclean;help;completions'= {
        }
        &'ctxclean;help;man'= {
        }
        &'ctxclean;help;help'= {
        }
    ]
    $completions[$command]
}
