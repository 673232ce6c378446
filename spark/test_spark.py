#!/usr/bin/env python3
"""Tests of spark/ctxclean_spark.py in Spark's local mode (local[2]).

    python3 spark/test_spark.py [--ctxclean target/debug/ctxclean]

Installs what it needs itself: a Java 17 runtime from the distribution's
packages when `java` is missing (as root, with apt-get), and PySpark from the
Python registry into the environment the Python steps share
(tests/pyenv.py). When neither can be had it prints why and exits 0
without testing (the only way it skips).

Checks, against single-process ctxclean on the same input:
  - a JSONL dataset (the fixtures' one-conversation-per-line files and a
    generated 3 MB corpus, in 6 partitions: sized for the test; bench/spark.py takes the
    large ones) through a chain: the Spark output equals the
    CLI's output line for line; the report rows and the Parquet table have a
    row per conversation, with the lines of the file;
  - stats: the aggregated totals, roles and tools equal `ctxclean stats`;
    `spark.read.json` of the rows gives typed columns;
  - per-session logs (binaryFiles): each cleaned file equals the CLI's
    --out-dir output; stats totals equal the CLI's;
  - a malformed line fails the job with its file and line in the dataset,
    and passes with --skip-invalid, counted;
  - the command line: usage errors exit 2, a failed job exits 1.
"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, "target")
sys.path.insert(0, os.path.join(ROOT, "tests"))
import pyenv  # noqa: E402

WORK = os.path.join(TARGET, "spark-test")


def say(msg):
    print(f"test_spark: {msg}", flush=True)


def skip(reason):
    say(f"SKIPPED: {reason}")
    sys.exit(0)


def ensure_java():
    if shutil.which("java"):
        r = subprocess.run(["java", "-version"], capture_output=True, text=True)
        if r.returncode == 0:
            return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        skip("no working `java`, and no apt-get as root to install openjdk-17-jre-headless")
    say("installing a Java 17 runtime (openjdk-17-jre-headless)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "--no-install-recommends",
                 "openjdk-17-jre-headless"]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            skip(f"could not install Java: {' '.join(cmd)}: {r.stderr.strip()[-400:]}")


def venv_python():
    """The shared environment's Python (tests/pyenv.py), with pyspark."""
    try:
        return pyenv.python(say)
    except (subprocess.CalledProcessError, OSError) as e:
        skip(f"could not make the Python environment: {e}")


def binary(args):
    if "--ctxclean" in args:
        return os.path.abspath(args[args.index("--ctxclean") + 1])
    exe = os.path.join(TARGET, "debug", "ctxclean")
    if not os.path.exists(exe):
        say("building ctxclean (cargo build --locked)")
        subprocess.run(["cargo", "build", "--locked"], cwd=ROOT, check=True)
    return exe


# ---------------------------------------------------------------------------
# Inputs


def corpus(path, mb):
    """The benchmark's seeded corpus (bench/corpus.py: OpenAI conversations
    with tool calls, JSON results, CJK and emoji, one per line) of `mb` MB."""
    if os.path.exists(path) and abs(os.path.getsize(path) - mb * 1e6) < mb * 1e5:
        return path
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "corpus.py"), path + ".tmp",
                    "--mb", str(mb)], check=True)
    os.replace(path + ".tmp", path)
    return path


def with_bad_line(src, dst, at):
    """A copy of `src` whose line `at` (1-based) is cut short."""
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as g:
        for i, line in enumerate(f, 1):
            g.write(line[: len(line) // 2] + "\n" if i == at else line)
    return dst


def cli(exe, *words, stdin=None):
    r = subprocess.run([exe, *words], capture_output=True, input=stdin)
    return r.returncode, r.stdout, r.stderr.decode("utf-8", "replace")


def parts(folder):
    out = b""
    for name in sorted(os.listdir(folder)):
        if name.startswith("part-"):
            with open(os.path.join(folder, name), "rb") as f:
                out += f.read()
    return out


def lines_of(folder):
    return [json.loads(l) for l in parts(folder).decode("utf-8").splitlines() if l.strip()]


# ---------------------------------------------------------------------------
# The tests


class Failed(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Failed(msg)


def job(job_module, spark, *argv):
    """Runs the job in the shared session: (exit code, standard error)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = job_module.main(list(argv), spark=spark)
    return code, err.getvalue()


def tests(spark, exe, job_module):
    sc = spark.sparkContext
    fx = lambda p: os.path.join(ROOT, "fixtures", p)  # noqa: E731
    big = corpus(os.path.join(WORK, "corpus-3mb.jsonl"), 3)
    small = corpus(os.path.join(WORK, "corpus-2mb.jsonl"), 2)
    chain = ["filter", "--previous-cycles", "then", "compact-tools", "--max-result-tokens", "200",
             "then", "trim", "--max-tokens", "1500"]

    def out(name):
        d = os.path.join(WORK, name)
        shutil.rmtree(d, ignore_errors=True)
        return d

    def jsonl_chain_over_a_corpus_equals_the_cli_line_for_line():
        o, r, pq = out("big-out"), out("big-report"), out("big-parquet")
        code, err = job(job_module, spark, "--ctxclean", exe, "--input", big, "--partitions", "6",
                        "--output", o, "--report", r, "--parquet", pq, "--", *chain)
        check(code == 0, err)
        c, want, _ = cli(exe, *chain, "-q", big)
        check(c == 0, "the CLI failed")
        got = parts(o)
        check(got == want, f"{len(got)} bytes from Spark, {len(want)} from the CLI; first "
              f"difference at line {first_difference(got, want)}")
        n = want.count(b"\n")
        rows = lines_of(r)
        check(len(rows) == n, f"{len(rows)} report rows for {n} lines")
        check(sorted(x["index"] for x in rows) == list(range(n)), "report indices are not 0..n")
        check(all(x["source"] == big for x in rows), "report rows name another source")
        table = spark.read.parquet(pq)
        check(table.count() == n, "the Parquet table has another number of rows")
        types = dict(table.dtypes)
        check(types["tokens"] == "bigint" and types["line"] == "bigint", str(types))
        check(types["by_tool"].startswith("array<struct"), types["by_tool"])
        texts = [r_.text for r_ in table.orderBy("line").select("text").collect()]
        check("\n".join(texts) + "\n" == want.decode("utf-8"), "Parquet text differs")
        # The stats columns are the stats of the cleaned line.
        c, stats_rows, _ = cli(exe, "stats", "--jsonl", "-q", stdin=want)
        want_tokens = sum(json.loads(l)["tokens"] for l in stats_rows.splitlines())
        got_tokens = table.agg({"tokens": "sum"}).first()[0]
        check(got_tokens == want_tokens, f"{got_tokens} != {want_tokens}")

    def jsonl_fixtures_equal_the_cli():
        for f, words in ((fx("llama-factory/reason_tool_use_demo_8.jsonl"),
                          ["trim", "--max-tokens", "300"]),
                         (fx("hf-chat/minimind-sft.jsonl"), ["convert", "--to", "openai"]),
                         (fx("llama-factory/v1_multimodal_demo.jsonl"),
                          ["filter", "--previous-cycles"])):
            o = out("fixture-out")
            code, err = job(job_module, spark, "--ctxclean", exe, "--input", f, "--partitions",
                            "3", "--output", o, "--", *words)
            check(code == 0, err)
            c, want, _ = cli(exe, *words, "-q", f)
            check(parts(o) == want, f"{f}: Spark output differs from the CLI's")

    def stats_aggregate_equals_ctxclean_stats():
        summary = os.path.join(WORK, "stats-summary.json")
        so = out("stats-out")
        code, err = job(job_module, spark, "--ctxclean", exe, "--input", big, "--partitions", "5",
                        "--summary-json", summary, "--stats-out", so, "--", "stats")
        check(code == 0, err)
        agg = json.load(open(summary))
        c, doc, _ = cli(exe, "stats", "--json", "-q", big)
        want = json.loads(doc)
        for k in ("conversations", "messages", "tokens", "tool_calls", "tool_results", "images",
                  "opaque_bytes"):
            check(agg["total"][k] == want["total"][k], f"{k}: {agg['total'][k]} != "
                  f"{want['total'][k]}")
        roles, tools = {}, {}
        for conv in want["conversations"]:
            for role, n in conv["by_role"].items():
                roles[role] = roles.get(role, 0) + n["tokens"]
            for tool, n in conv["tool_results_by_tool"].items():
                tools[tool] = tools.get(tool, 0) + n["tokens"]
        check({r["role"]: r["tokens"] for r in agg["by_role"]} == roles, "by role differs")
        check({t["tool"]: t["tokens"] for t in agg["by_tool"]} == tools, "by tool differs")
        heaviest = max(want["conversations"], key=lambda c_: c_["tokens"])
        check(agg["heaviest"][0]["tokens"] == heaviest["tokens"], "heaviest differs")
        rows = spark.read.parquet(os.path.join(so, "rows"))
        lines = sorted(r_.line for r_ in rows.select("line").collect())
        check(lines == list(range(1, len(lines) + 1)), "stats rows do not carry the file's lines")

    def stats_rows_read_as_typed_columns():
        c, rows, _ = cli(exe, "stats", "--jsonl", "-q", "--skip-invalid",
                         *fixture_files())
        check(c == 0, "stats --jsonl failed on the fixtures")
        df = spark.read.json(sc.parallelize(rows.decode("utf-8").splitlines()))
        types = dict(df.dtypes)
        for col, ty in (("tokens", "bigint"), ("messages", "bigint"), ("index", "bigint"),
                        ("line", "bigint"), ("source", "string"), ("needs_vision", "boolean"),
                        ("logged_cache_read_tokens", "bigint"), ("opaque_bytes", "bigint")):
            check(types.get(col) == ty, f"{col}: {types.get(col)}, not {ty}")
        check(types["by_role"].startswith("struct<assistant:struct<messages:bigint"),
              types["by_role"])
        check(types["by_tool"] == "array<struct<results:bigint,tokens:bigint,tool:string>>",
              types["by_tool"])
        schema = json.load(open(os.path.join(ROOT, "schema", "stats-row.json")))
        check(set(df.columns) == set(schema["required"]), "columns are not the schema's")

    def sessions_equal_the_cli_out_dir():
        dirs = [fx("claude-code"), fx("codex"), fx("cline"), fx("gemini")]
        words = ["trim", "--max-tokens", "400", "--skip-invalid"]
        collected, rep, pq = out("sessions-collect"), out("sessions-report"), out("sessions-pq")
        code, err = job(job_module, spark, "--ctxclean", exe, "--kind", "sessions",
                        *sum((["--input", d] for d in dirs), []), "--collect", collected,
                        "--report", rep, "--output", pq, "--", *words)
        check(code == 0, err)
        files = [os.path.join(d, n) for d in dirs for n in sorted(os.listdir(d))
                 if n.endswith((".json", ".jsonl", ".traj"))]
        # The CLI file by file (two inputs of one name cannot share an
        # --out-dir): its output and its report rows.
        n, want_rows = 0, []
        for f in files:
            c, want, e = cli(exe, *words, "-q", "--report-jsonl", "-", f)
            check(c == 0, f"{f}: {e}")
            want_rows += [json.loads(l) for l in e.splitlines() if l.startswith("{")]
            rel = os.path.relpath(f, os.path.join(ROOT, "fixtures"))
            got = open(os.path.join(collected, rel), "rb").read()
            check(got == want, f"{rel}: Spark output differs from the CLI's")
            n += 1
        check(n >= 20, f"only {n} session files")
        rows = lines_of(rep)
        check(len(rows) == len(want_rows), f"{len(rows)} report rows, {len(want_rows)} from CLI")
        check({(r["source"], r["index"]) for r in rows}
              == {(r["source"], r["index"]) for r in want_rows}, "report rows differ")
        table = spark.read.parquet(pq)
        check(table.count() == len(files), "the Parquet table has another number of files")

    def sessions_stats_equal_ctxclean_stats():
        summary = os.path.join(WORK, "sessions-summary.json")
        dirs = [fx("claude-code"), fx("codex"), fx("openhands"), fx("exports")]
        code, err = job(job_module, spark, "--ctxclean", exe, "--kind", "sessions",
                        *sum((["--input", d] for d in dirs), []), "--summary-json", summary,
                        "--", "stats", "--skip-invalid")
        check(code == 0, err)
        agg = json.load(open(summary))
        c, doc, _ = cli(exe, "stats", "--json", "-q", "--skip-invalid", *dirs)
        want = json.loads(doc)["total"]
        for k in ("conversations", "messages", "tokens", "tool_calls", "tool_results"):
            check(agg["total"][k] == want[k], f"{k}: {agg['total'][k]} != {want[k]}")
        check(agg["skipped_lines"] == want["skipped_lines"],
              f"skipped {agg['skipped_lines']} != {want['skipped_lines']}")

    def a_malformed_line_fails_the_job_with_its_file_and_line():
        total = sum(1 for _ in open(small, encoding="utf-8"))
        at = total * 3 // 4
        bad = with_bad_line(small, os.path.join(WORK, "corpus-bad.jsonl"), at)
        code, err = job(job_module, spark, "--ctxclean", exe, "--input", bad, "--partitions", "4",
                        "--output", out("bad-out"), "--", "trim", "--max-tokens", "500")
        check(code == 1, f"exit {code}: {err[-2000:]}")
        c, _, cli_err = cli(exe, "trim", "--max-tokens", "500", "-q", bad)
        located = [l for l in cli_err.splitlines() if l.startswith("ctxclean: ")][0]
        want = located.replace("ctxclean: ", "ctxclean_spark: ", 1)
        check(want in err, f"wanted {want!r} in {err[-1500:]!r}")
        check(f"corpus-bad.jsonl:{at}:" in err, err[-1500:])
        # --skip-invalid: kept in place, counted, the job goes on.
        o = out("bad-skip")
        code, err = job(job_module, spark, "--ctxclean", exe, "--input", bad, "--partitions", "4",
                        "--output", o, "--", "trim", "--max-tokens", "500", "--skip-invalid")
        check(code == 0, err[-2000:])
        check("1 invalid line skipped" in err, err[-1000:])
        c, want_out, _ = cli(exe, "trim", "--max-tokens", "500", "--skip-invalid", "-q", bad)
        check(parts(o) == want_out, "--skip-invalid output differs from the CLI's")

    def a_failing_session_fails_the_job_or_is_counted_with_keep_going():
        dirs = ["--input", fx("codex"), "--input", fx("malformed/truncated.json")]
        code, err = job(job_module, spark, "--ctxclean", exe, "--kind", "sessions", *dirs,
                        "--", "trim", "--max-tokens", "300")
        check(code == 1, err[-2000:])
        check(f"ctxclean_spark: {fx('malformed/truncated.json')}:1:46: EOF while parsing" in err,
              err[-2000:])
        collected = out("keep-going")
        code, err = job(job_module, spark, "--ctxclean", exe, "--kind", "sessions", *dirs,
                        "--collect", collected, "--", "trim", "--max-tokens", "300",
                        "--keep-going")
        check(code == 1, err[-2000:])
        check("1 file failed" in err and "truncated.json:1:46" in err, err[-2000:])
        check(sorted(os.listdir(os.path.join(collected, "codex"))) == sorted(os.listdir(fx("codex"))),
              "codex files missing")

    def the_command_line():
        script = os.path.join(ROOT, "spark", "ctxclean_spark.py")
        r = subprocess.run([sys.executable, script, "--input", "x"], capture_output=True,
                           text=True)
        check(r.returncode == 2 and "after --" in r.stderr, r.stderr)
        r = subprocess.run([sys.executable, script, "--input", "x", "--", "trim", "-o", "y"],
                           capture_output=True, text=True)
        check(r.returncode == 2 and "-o is the job's" in r.stderr, r.stderr)
        # An existing output folder is never replaced.
        taken = out("taken")
        os.makedirs(taken)
        code, err = job(job_module, spark, "--ctxclean", exe, "--input", small, "--output",
                        taken, "--", "trim", "--max-tokens", "500")
        check(code == 2 and "exists" in err, err)
        # A session log (one message per line) is not a JSONL dataset.
        code, err = job(job_module, spark, "--ctxclean", exe, "--input",
                        fx("claude-code/viewer-session.jsonl"), "--output", out("cc"), "--",
                        "trim", "--max-tokens", "500")
        check(code == 2 and "--kind sessions" in err, err[-1500:])
        # A whole run as spark-submit would start it, failing on bad input.
        bad = os.path.join(WORK, "corpus-bad.jsonl")
        r = subprocess.run([sys.executable, script, "--master", "local[2]", "--ctxclean", exe,
                            "--input", bad, "--output", out("cli-out"), "--", "trim",
                            "--max-tokens", "500"],
                           capture_output=True, text=True)
        check(r.returncode == 1, r.stderr[-2000:])
        check("corpus-bad.jsonl:" in r.stderr.splitlines()[-1], r.stderr[-2000:])

    failures = 0
    for t in (jsonl_chain_over_a_corpus_equals_the_cli_line_for_line, jsonl_fixtures_equal_the_cli,
              stats_aggregate_equals_ctxclean_stats, stats_rows_read_as_typed_columns,
              sessions_equal_the_cli_out_dir, sessions_stats_equal_ctxclean_stats,
              a_malformed_line_fails_the_job_with_its_file_and_line,
              a_failing_session_fails_the_job_or_is_counted_with_keep_going, the_command_line):
        start = time.time()
        try:
            t()
            say(f"ok      {t.__name__} ({time.time() - start:.1f} s)")
        except Exception as e:  # report every test, then fail
            failures += 1
            say(f"FAILED  {t.__name__}: {type(e).__name__}: {e}")
    return failures


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines()), 1):
        if x != y:
            return i
    return min(a.count(b"\n"), b.count(b"\n")) + 1


def fixture_files():
    out = []
    for d, _, names in os.walk(os.path.join(ROOT, "fixtures")):
        if "malformed" in d or d.endswith("tokens"):
            continue
        out += [os.path.join(d, n) for n in sorted(names) if n.endswith((".json", ".jsonl"))]
    return sorted(out)


def inner(args):
    exe = binary(args)
    os.makedirs(WORK, exist_ok=True)
    sys.path.insert(0, os.path.join(ROOT, "spark"))
    import ctxclean_spark
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    # The JVMs of these tests (this session's, and the job's own run by
    # the_command_line) live a minute: the C2 compiler and the parallel
    # collector cost a third of the test's CPU and never pay back, and a
    # few rows need no 200 shuffle partitions. Speed only; what the job
    # computes is the same.
    os.environ["PYSPARK_SUBMIT_ARGS"] = (
        "--driver-java-options '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC'"
        " --conf spark.sql.shuffle.partitions=2 pyspark-shell")
    spark = (SparkSession.builder.master("local[2]").appName("ctxclean-tests")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    if os.path.isfile(exe):
        spark.sparkContext.addFile(exe)
    try:
        failures = tests(spark, exe, ctxclean_spark)
    finally:
        spark.stop()
    if failures:
        say(f"{failures} failed")
        return 1
    say("all passed")
    return 0


def main(args):
    if "--inner" in args:
        return inner(args)
    start = time.time()
    ensure_java()
    py = venv_python()
    r = subprocess.run([py, os.path.abspath(__file__), "--inner", *args],
                       env=dict(os.environ, PYSPARK_PYTHON=py))
    say(f"{time.time() - start:.0f} s")
    return r.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
