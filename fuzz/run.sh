#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600), JOBS at a time (default 2).
# Needs cargo-fuzz (`cargo install cargo-fuzz`); on a stable toolchain it is
# run with RUSTC_BOOTSTRAP=1. Crashes land in fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-600}
jobs=${2:-2}
[ -d corpus/read_value ] || ./seed.sh
mkdir -p logs
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O
targets=(read_auto read_format read_chunks read_trusting open_webui_details tool_result_json operations pre_tokenizer inflight answer_tap bill_chart read_value)
# Each target's exit status is printed, and any failure (a crash, or a
# target that could not run) makes the script fail.
status=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} sh -c \
  "cargo fuzz run -O {} -- -max_total_time=$seconds -max_len=131072 -rss_limit_mb=4096 -print_final_stats=1 > logs/{}.log 2>&1; s=\$?; echo '{} exit '\$s; exit \$s" \
  || status=$?
if [ "$status" -ne 0 ]; then
  echo "fuzz: a target failed (see logs/ and artifacts/)" >&2
  exit 1
fi
