_ctxclean() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="ctxclean"
                ;;
            ctxclean,apply)
                cmd="ctxclean__subcmd__apply"
                ;;
            ctxclean,bill)
                cmd="ctxclean__subcmd__bill"
                ;;
            ctxclean,cache-units)
                cmd="ctxclean__subcmd__cache__subcmd__units"
                ;;
            ctxclean,compact-tools)
                cmd="ctxclean__subcmd__compact__subcmd__tools"
                ;;
            ctxclean,completions)
                cmd="ctxclean__subcmd__completions"
                ;;
            ctxclean,convert)
                cmd="ctxclean__subcmd__convert"
                ;;
            ctxclean,filter)
                cmd="ctxclean__subcmd__filter"
                ;;
            ctxclean,help)
                cmd="ctxclean__subcmd__help"
                ;;
            ctxclean,man)
                cmd="ctxclean__subcmd__man"
                ;;
            ctxclean,replay)
                cmd="ctxclean__subcmd__replay"
                ;;
            ctxclean,serve)
                cmd="ctxclean__subcmd__serve"
                ;;
            ctxclean,stats)
                cmd="ctxclean__subcmd__stats"
                ;;
            ctxclean,summarize)
                cmd="ctxclean__subcmd__summarize"
                ;;
            ctxclean,trim)
                cmd="ctxclean__subcmd__trim"
                ;;
            ctxclean,validate)
                cmd="ctxclean__subcmd__validate"
                ;;
            ctxclean__subcmd__help,apply)
                cmd="ctxclean__subcmd__help__subcmd__apply"
                ;;
            ctxclean__subcmd__help,bill)
                cmd="ctxclean__subcmd__help__subcmd__bill"
                ;;
            ctxclean__subcmd__help,cache-units)
                cmd="ctxclean__subcmd__help__subcmd__cache__subcmd__units"
                ;;
            ctxclean__subcmd__help,compact-tools)
                cmd="ctxclean__subcmd__help__subcmd__compact__subcmd__tools"
                ;;
            ctxclean__subcmd__help,completions)
                cmd="ctxclean__subcmd__help__subcmd__completions"
                ;;
            ctxclean__subcmd__help,convert)
                cmd="ctxclean__subcmd__help__subcmd__convert"
                ;;
            ctxclean__subcmd__help,filter)
                cmd="ctxclean__subcmd__help__subcmd__filter"
                ;;
            ctxclean__subcmd__help,help)
                cmd="ctxclean__subcmd__help__subcmd__help"
                ;;
            ctxclean__subcmd__help,man)
                cmd="ctxclean__subcmd__help__subcmd__man"
                ;;
            ctxclean__subcmd__help,replay)
                cmd="ctxclean__subcmd__help__subcmd__replay"
                ;;
            ctxclean__subcmd__help,serve)
                cmd="ctxclean__subcmd__help__subcmd__serve"
                ;;
            ctxclean__subcmd__help,stats)
                cmd="ctxclean__subcmd__help__subcmd__stats"
                ;;
            ctxclean__subcmd__help,summarize)
                cmd="ctxclean__subcmd__help__subcmd__summarize"
                ;;
            ctxclean__subcmd__help,trim)
                cmd="ctxclean__subcmd__help__subcmd__trim"
                ;;
            ctxclean__subcmd__help,validate)
                cmd="ctxclean__subcmd__help__subcmd__validate"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        ctxclean)
            opts="-h -V --help --version stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__apply)
            opts="-j -o -q -v -h -V --print-chain --from --skip-invalid --tokenizer --model --prices --glob --hidden --jobs --keep-going --output --out-dir --in-place --backup --report --report-jsonl --save-recipe --quiet --verbose --to --strict --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report-jsonl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --save-recipe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__bill)
            opts="-h -V --json --svg --by --model --prices --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --svg)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --by)
                    COMPREPLY=($(compgen -W "day conversation" -- "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__cache__subcmd__units)
            opts="-h -V --format --tokenizer --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --format)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -W "o200k_base cl100k_base p50k_base r50k_base approx" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__compact__subcmd__tools)
            opts="-j -o -q -v -h -V --from --skip-invalid --tokenizer --model --prices --glob --hidden --jobs --keep-going --output --out-dir --in-place --backup --report --report-jsonl --save-recipe --quiet --verbose --to --strict --max-result-tokens --max-total-tokens --keep-last --exclude-tools --only-tools --trigger-tokens --clear-at-least --truncate-items --preview-chars --clear-inputs --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report-jsonl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --save-recipe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --max-result-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-total-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keep-last)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exclude-tools)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --only-tools)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --trigger-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --clear-at-least)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --truncate-items)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --preview-chars)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__completions)
            opts="-h -V --help --version bash elvish fish powershell zsh"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__convert)
            opts="-j -o -q -v -h -V --from --skip-invalid --tokenizer --model --prices --glob --hidden --jobs --keep-going --output --out-dir --in-place --backup --report --report-jsonl --save-recipe --quiet --verbose --to --strict --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report-jsonl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --save-recipe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__filter)
            opts="-j -o -q -v -h -V --from --skip-invalid --tokenizer --model --prices --glob --hidden --jobs --keep-going --output --out-dir --in-place --backup --report --report-jsonl --save-recipe --quiet --verbose --to --strict --previous-cycles --agent --chat-id --supersede --strip-processed-images --dedupe-tool-results --moved-past --retried-failures --read-again --drop-thinking --keep-thinking-turns --include-roles --exclude-roles --include-names --exclude-names --exclude-tools --exclude-tool-calls --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report-jsonl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --save-recipe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --agent)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chat-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --supersede)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keep-thinking-turns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --include-roles)
                    COMPREPLY=($(compgen -W "system developer user assistant tool function human ai" -- "${cur}"))
                    return 0
                    ;;
                --exclude-roles)
                    COMPREPLY=($(compgen -W "system developer user assistant tool function human ai" -- "${cur}"))
                    return 0
                    ;;
                --include-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exclude-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exclude-tools)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help)
            opts="stats filter compact-tools trim summarize validate convert apply serve replay bill completions man cache-units help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__apply)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__bill)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__cache__subcmd__units)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__compact__subcmd__tools)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__completions)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__convert)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__filter)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__man)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__replay)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__stats)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__summarize)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__trim)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__help__subcmd__validate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__man)
            opts="-h -V --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__replay)
            opts="-j -q -h -V --from --skip-invalid --tokenizer --model --prices --glob --hidden --jobs --keep-going --quiet --recipe --compare --budget --cache-horizon --json --jsonl --suggest --oracle --oracle-recall --min-recall --min-worst --save-recipe --chart --write-requests --replace-requests --forwarded --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --recipe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --compare)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cache-horizon)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --oracle-recall)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-recall)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-worst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --save-recipe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chart)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --write-requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --forwarded)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__serve)
            opts="-h -V --upstream --listen --recipe --max-body --max-connections --header-timeout --body-timeout --clean-timeout --connect-timeout --timeout --log --dry-run --cache-horizon --cache-lifetime --hold-memory --model --prices --print-config --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --upstream)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --recipe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-body)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-connections)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --body-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --clean-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --connect-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cache-horizon)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cache-lifetime)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hold-memory)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__stats)
            opts="-j -q -h -V --from --skip-invalid --tokenizer --model --prices --glob --hidden --jobs --keep-going --quiet --json --jsonl --per-message --tools --large-context --by --timeline --svg --max-tokens --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --large-context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --by)
                    COMPREPLY=($(compgen -W "conversation file" -- "${cur}"))
                    return 0
                    ;;
                --svg)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__summarize)
            opts="-j -o -q -v -h -V --from --skip-invalid --tokenizer --model --prices --glob --hidden --jobs --keep-going --output --out-dir --in-place --backup --report --report-jsonl --save-recipe --quiet --verbose --to --strict --threshold --budget-in --keep --min-keep --engine --url --engine-model --api-key-env --timeout --prompt-file --max-summary-tokens --max-input-tokens --engine-context --placement --on-failure --cache --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report-jsonl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --save-recipe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --threshold)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-in)
                    COMPREPLY=($(compgen -W "counted billed" -- "${cur}"))
                    return 0
                    ;;
                --keep)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-keep)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --engine)
                    COMPREPLY=($(compgen -W "extractive ollama openai" -- "${cur}"))
                    return 0
                    ;;
                --url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --engine-model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --api-key-env)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prompt-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-summary-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-input-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --engine-context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --placement)
                    COMPREPLY=($(compgen -W "system user" -- "${cur}"))
                    return 0
                    ;;
                --on-failure)
                    COMPREPLY=($(compgen -W "truncate keep fail" -- "${cur}"))
                    return 0
                    ;;
                --cache)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__trim)
            opts="-j -o -q -v -h -V --from --skip-invalid --tokenizer --model --prices --glob --hidden --jobs --keep-going --output --out-dir --in-place --backup --report --report-jsonl --save-recipe --quiet --verbose --to --strict --max-tokens --strategy --start-on --end-on --no-system --allow-partial --max-messages --max-turns --no-placeholder --step --budget-in --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report-jsonl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --save-recipe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --max-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --strategy)
                    COMPREPLY=($(compgen -W "last first" -- "${cur}"))
                    return 0
                    ;;
                --start-on)
                    COMPREPLY=($(compgen -W "system developer user assistant tool function human ai" -- "${cur}"))
                    return 0
                    ;;
                --end-on)
                    COMPREPLY=($(compgen -W "system developer user assistant tool function human ai" -- "${cur}"))
                    return 0
                    ;;
                --max-messages)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-turns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --step)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-in)
                    COMPREPLY=($(compgen -W "counted billed" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ctxclean__subcmd__validate)
            opts="-j -q -h -V --from --skip-invalid --tokenizer --model --prices --glob --hidden --jobs --keep-going --quiet --provider --json --request --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "openai anthropic claude-code cline open-webui librechat branched langchain responses bedrock codex pi droid cursor cursor-ide continue zed amazon-q opencode crush grok-cli grok-build qwen-code kimi-code goose letta openai-agents openhands gemini sharegpt hf-chat copilot copilot-chat claude-ai chatgpt grok aistudio" -- "${cur}"))
                    return 0
                    ;;
                --tokenizer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prices)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --glob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --provider)
                    COMPREPLY=($(compgen -W "openai anthropic gemini responses" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _ctxclean -o nosort -o bashdefault -o default ctxclean
else
    complete -F _ctxclean -o bashdefault -o default ctxclean
fi
