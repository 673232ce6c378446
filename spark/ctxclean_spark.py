#!/usr/bin/env python3
"""Run any ctxclean command or chain over a dataset on Apache Spark.

    spark-submit --files target/release/ctxclean spark/ctxclean_spark.py \\
        --input data/train.jsonl --output out/train -- trim --max-tokens 2000

Everything after `--` is a ctxclean command line (`trim --max-tokens 2000`,
`filter --previous-cycles then trim --max-tokens 8000`, `stats`, ...).

Two kinds of datasets (--kind):

  jsonl     JSONL files of one conversation per line (fine-tuning sets,
            request logs). Each partition of lines is piped through one
            ctxclean process, as RDD.pipe does (with ctxclean's standard error
            kept, so that its located errors reach the driver); the output
            keeps the input's lines in order and is written as text part files
            (--output), and optionally as Parquet of the cleaned line with its
            stats columns (--parquet).
  sessions  directories of per-session logs (Claude Code, Codex, Cline, ...:
            one conversation per file), read with binaryFiles. Each task writes
            its files to a task-local temporary folder and runs one ctxclean
            over them with --out-dir; the job emits (path, cleaned bytes,
            report row), saved as Parquet (--output) and, for a local folder,
            as files mirroring the input tree (--collect).

With `stats`, the rows of `ctxclean stats --jsonl` are aggregated into
DataFrames (totals, tokens by format, role and tool, the heaviest sessions),
printed, and saved with --stats-out. With --report, a transforming command's
`--report-jsonl` rows are saved too.

The ctxclean binary: --ctxclean PATH ships the file at PATH on the driver
to the executors (SparkContext.addFile); spark-submit --files PATH/ctxclean
does the same on a cluster (YARN, Kubernetes, standalone). A bare name is
looked up among the shipped files, then on the executors' PATH.

Bad input follows the CLI's rules: without --skip-invalid the job fails with
ctxclean's error, its file and line in the dataset; with --skip-invalid the
invalid lines are kept in place, counted, and the job goes on. In the
sessions kind, --keep-going counts failed files and goes on.

Only PySpark is needed (3.4 or later); no other Python package.
"""

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

PROG = "ctxclean_spark"
# A task's failure carries its location between these markers, for the driver.
MARK, END = "<<ctxclean-failure>>", "<<end-ctxclean-failure>>"
SKIPPED = re.compile(r"([\d,]+) invalid lines? skipped")
# ctxclean's located error: `ctxclean: FILE:L:C: …` for one failure, or
# `  FILE:L:C: …` in the list after a count for several (--keep-going).
LOCATED = re.compile(r"^(?:ctxclean: )?(.+?):(\d+):(\d+): (.*)$")
# A note or warning of ctxclean, and the count of those it did not print.
TOLD = re.compile(r"^ctxclean [^:]+: (note|warning): (.*)$")
MORE = re.compile(r"^ctxclean [^:]+: (note|warning): ([\d,]+) (?:notes|warnings) more")
CONVERSATION = re.compile(r"^(.*?): conversation (\d+): (.*)$")
TOLD_KEPT = 10


def told_of(stderr, names=None):
    """ctxclean's notes and warnings: the first few as (kind, source,
    conversation or None, text), and how many of each there were."""
    kept, counts = [], {"note": 0, "warning": 0}
    for line in stderr.splitlines():
        m = MORE.match(line)
        if m:
            counts[m.group(1)] += int(m.group(2).replace(",", ""))
            continue
        m = TOLD.match(line)
        if not m:
            continue
        kind, rest = m.group(1), m.group(2)
        counts[kind] += 1
        if len(kept) < TOLD_KEPT:
            c = CONVERSATION.match(rest)
            if c:
                source = c.group(1)
                if names:
                    source = names.get(source, source)
                kept.append((kind, source, int(c.group(2)), c.group(3)))
            else:
                kept.append((kind, None, None, rest))
    return kept, counts


class Usage(Exception):
    """A usage error: exit 2."""


def parse_args(argv):
    if "--" not in argv:
        raise Usage("give the ctxclean command after --: ... -- trim --max-tokens 2000")
    cut = argv.index("--")
    ours, words = argv[:cut], argv[cut + 1 :]
    if not words:
        raise Usage("no ctxclean command after --")
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Run a ctxclean command or chain over a dataset on Apache Spark.",
        usage="%(prog)s --input PATH [options] -- COMMAND [ARGS...]",
    )
    p.add_argument("--input", action="append", required=True, metavar="PATH",
                   help="a file, folder or glob (any Hadoop file system URI); repeatable")
    p.add_argument("--kind", choices=["jsonl", "sessions"], default="jsonl",
                   help="jsonl: one conversation per line; sessions: one conversation per file")
    p.add_argument("--output", metavar="DIR",
                   help="jsonl: cleaned lines as text part files; sessions: Parquet of "
                        "(path, content, report)")
    p.add_argument("--parquet", metavar="DIR",
                   help="jsonl: Parquet of each cleaned line with its stats columns")
    p.add_argument("--collect", metavar="DIR",
                   help="sessions: write the cleaned files under DIR on the driver, "
                        "mirroring their paths below the input")
    p.add_argument("--report", metavar="DIR",
                   help="the --report-jsonl rows of a transforming command, as JSON lines")
    p.add_argument("--stats-out", metavar="DIR",
                   help="stats: the rows as Parquet and every aggregate as JSON under DIR")
    p.add_argument("--summary-json", metavar="FILE",
                   help="stats: the aggregates as one JSON document in a local FILE")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="stats: how many of the heaviest conversations to list (default 10)")
    p.add_argument("--partitions", type=int, metavar="N",
                   help="the least number of partitions to read the input in")
    p.add_argument("--pattern", action="append", metavar="GLOB",
                   help="sessions: file names to take (default: *.json, *.jsonl, *.traj)")
    p.add_argument("--ctxclean", default="ctxclean", metavar="PATH",
                   help="the ctxclean binary: a file on the driver is shipped to the "
                        "executors; a bare name is looked up among the files shipped with "
                        "spark-submit --files, then on PATH (default: ctxclean)")
    p.add_argument("--master", metavar="URL",
                   help="the Spark master when not run by spark-submit (default local[*])")
    args = p.parse_args(ours)
    if words[0] == "stats":
        if "--jsonl" not in words:
            words = words + ["--jsonl"]
        if args.output or args.parquet or args.collect or args.report:
            raise Usage("stats writes no transcript: use --stats-out or --summary-json")
    else:
        for flag in ("-o", "--output", "--out-dir", "--in-place", "--report", "--report-jsonl"):
            if flag in words:
                raise Usage(f"{flag} is the job's to set: give --output, --report or "
                            f"--collect to {PROG} instead")
    if args.parquet and args.kind != "jsonl":
        raise Usage("--parquet is for --kind jsonl; --output is Parquet already for sessions")
    if args.collect and args.kind != "sessions":
        raise Usage("--collect is for --kind sessions; jsonl output is text part files")
    args.words = words
    args.stats = words[0] == "stats"
    # Inputs given relative (and local) are shown relative, as ctxclean would.
    args.base = None
    if all(":" not in i and not os.path.isabs(i) for i in args.input):
        args.base = os.getcwd()
    return args


# ---------------------------------------------------------------------------
# On the executors


def binary(name):
    """The path of the ctxclean binary on this executor."""
    from pyspark import SparkFiles

    base = os.path.basename(name)
    try:
        shipped = SparkFiles.get(base)
    except Exception:  # no SparkFiles root outside a task
        shipped = None
    # Shipped files: SparkFiles' folder, or the container's working folder
    # (YARN's distributed cache); then the path given, or PATH.
    local = os.path.join(os.getcwd(), base)
    for candidate in (shipped, local, name if os.sep in name else shutil.which(name)):
        if candidate and os.path.isfile(candidate):
            mode = os.stat(candidate).st_mode
            if not mode & stat.S_IXUSR:
                # --files may drop the executable bit.
                try:
                    os.chmod(candidate, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
                except OSError:
                    pass
            return candidate
    raise RuntimeError(
        f"{PROG}: no ctxclean binary named {name!r} on this executor: ship it with "
        f"spark-submit --files PATH/ctxclean (or --ctxclean PATH from the driver)"
    )


def with_jobs(words):
    """The command with `--jobs` set to the task's cores (spark.task.cpus),
    unless it sets its own: ctxclean would otherwise use every core of the
    machine in each of the tasks running side by side on it."""
    if any(w in ("-j", "--jobs") or w.startswith("--jobs=") for w in words):
        return words
    from pyspark import TaskContext

    ctx = TaskContext.get()
    cpus = ctx.cpus() if ctx is not None else 1
    # A chain takes flags of the run in any step: put it after the first word.
    return [words[0], "--jobs", str(max(1, cpus))] + words[1:]


def failure(**where):
    """An exception the driver reads back: ctxclean's error and where it was."""
    return RuntimeError(MARK + json.dumps(where) + END)


def skipped_of(stderr):
    """Invalid lines skipped, from ctxclean's summary line."""
    n = 0
    for line in stderr.splitlines():
        m = SKIPPED.search(line)
        if m and line.startswith("ctxclean "):
            n = max(n, int(m.group(1).replace(",", "")))
    return n


def run(argv, feed):
    """Runs ctxclean on `feed` (an iterator of bytes written to its standard
    input from a thread, as RDD.pipe does), yielding its output lines as they
    come; returns (exit code, standard error) as the generator's value. An
    error reading the feed is raised, never taken for the end of the input."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    errors, broken = [], []

    def write():
        try:
            for chunk in feed:
                proc.stdin.write(chunk)
        except BrokenPipeError:
            pass  # ctxclean stopped reading: its exit code says why
        except BaseException as e:  # the input itself failed
            broken.append(e)
            proc.kill()
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    def drain():
        errors.append(proc.stderr.read())

    threads = [threading.Thread(target=write, daemon=True),
               threading.Thread(target=drain, daemon=True)]
    for t in threads:
        t.start()
    for line in proc.stdout:
        yield line
    code = proc.wait()
    for t in threads:
        t.join()
    if broken:
        raise broken[0]
    return code, (errors[0] if errors else b"").decode("utf-8", "replace")


def drive(gen):
    """Collects a `run` generator: (output lines, code, stderr)."""
    out = []
    try:
        while True:
            out.append(next(gen))
    except StopIteration as stop:
        code, err = stop.value
    return out, code, err


def jsonl_task(exe_name, words, fid, uri, base, want_rows, parquet, metas=None):
    """The task of a JSONL dataset's partition: its lines through one
    ctxclean; emits ("out", fid, p, text), ("row", fid, p, json) (stats rows,
    or report rows when `want_rows`), ("pq", fid, p, json) (a cleaned line
    with its stats, for --parquet) and one ("meta", fid, p, lines,
    conversations, skipped, told), or adds it to the accumulator `metas`.
    Lines and indices are the partition's own; the driver makes them the
    file's."""

    path = shown(uri, base)

    def task(p, lines):
        exe = binary(exe_name)
        tmp = tempfile.mkdtemp(prefix="ctxclean-spark-")
        try:
            rows_path = os.path.join(tmp, "rows.jsonl")
            argv = [exe] + with_jobs(words)
            stats = words[0] == "stats"
            if not stats and want_rows:
                argv += ["--report-jsonl", rows_path]
            count = [0]

            def feed():
                for line in lines:  # bytes: read with use_unicode=False
                    count[0] += 1
                    yield line + b"\n"

            def check(code, err):
                if code == 0:
                    return
                located = (LOCATED.match(l) for l in err.splitlines())
                m = next((m for m in located if m and m.group(1) == "-"), None)
                if m:
                    raise failure(file=path, uri=uri, partition=p, line=int(m.group(2)),
                                  col=int(m.group(3)), message=m.group(4))
                raise failure(file=path, partition=p, message=err.strip()
                              or f"ctxclean exited with {code}")

            gen = run(argv, feed())
            if metas is not None:
                # One pass: the output streams on as it comes (a failed
                # task's output is discarded by Spark's output commit).
                produced = 0
                try:
                    while True:
                        line = next(gen)
                        produced += 1
                        yield line.rstrip(b"\r\n")
                except StopIteration as stop:
                    code, err = stop.value
                check(code, err)
                skipped = skipped_of(err)
                metas.add([(fid, p, count[0], produced - skipped, skipped, told_of(err))])
                return
            out, code, err = drive(gen)
            check(code, err)
            texts = [o.rstrip(b"\r\n") for o in out]
            rows = []
            if stats:
                rows, texts = [t.decode("utf-8") for t in texts], []
            elif want_rows:
                with open(rows_path, encoding="utf-8") as f:
                    rows = [l.rstrip("\n") for l in f if l.strip()]
            for t in texts:
                yield ("out", fid, p, t)
            for r in rows:
                yield ("row", fid, p, r)
            if parquet and texts:
                # The stats of each cleaned line, joined to it by line.
                exe_argv = [exe, "stats", "--jsonl", "--skip-invalid", "-q"]
                souts, scode, serr = drive(run(exe_argv, (t + b"\n" for t in texts)))
                if scode != 0:
                    raise failure(file=path, partition=p,
                                  message="stats of the output: " + serr.strip())
                by_line = {}
                for s in souts:
                    row = json.loads(s)
                    by_line[row["line"]] = row
                for k, t in enumerate(texts, 1):
                    row = {"line": k, "text": t.decode("utf-8")}
                    for key, value in by_line.get(k, {}).items():
                        if key not in ("source", "line", "index"):
                            row[key] = value
                    yield ("pq", fid, p, json.dumps(row, ensure_ascii=False, separators=(",", ":")))
            skipped = skipped_of(err)
            # One conversation per line: the output has a line for each, and
            # the invalid lines kept in place.
            convs = len(rows) if (stats or want_rows) else len(texts) - skipped
            yield ("meta", fid, p, count[0], convs, skipped, told_of(err))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    return task


def sessions_task(exe_name, words, keep_going):
    """The task of a partition of session files: one ctxclean over all of
    them in a task-local folder; emits ("file", path, bytes, row),
    ("row", path, json), ("failed", path, message) and ("meta", files,
    skipped)."""

    def task(pairs):
        exe = binary(exe_name)
        tmp = tempfile.mkdtemp(prefix="ctxclean-spark-")
        try:
            src, out_dir = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            os.makedirs(src)
            names = {}
            files = []
            for k, (path, data) in enumerate(pairs):
                local = os.path.join(src, f"{k:06d}-{os.path.basename(path.rstrip('/'))}")
                with open(local, "wb") as f:
                    f.write(data)
                names[local] = path
                files.append(local)
            if not files:
                return
            stats = words[0] == "stats"
            rows_path = os.path.join(tmp, "rows.jsonl")
            argv = [exe] + with_jobs(words)
            if not stats:
                argv += ["--out-dir", out_dir, "--report-jsonl", rows_path]
            argv += files
            out, code, err = drive(run(argv, iter(())))

            def original(text):
                for local, path in names.items():
                    text = text.replace(local, path)
                return text

            failed = []
            if code != 0:
                located = [LOCATED.match(l.strip()) for l in err.splitlines()]
                located = [m for m in located if m and m.group(1) in names]
                if keep_going and located:
                    failed = [(names[m.group(1)], original(m.group(0).strip()))
                              for m in located]
                elif located:
                    m = located[0]
                    raise failure(file=names[m.group(1)], line=int(m.group(2)),
                                  col=int(m.group(3)), message=original(m.group(4)))
                else:
                    raise failure(message=original(err.strip()) or f"ctxclean exited with {code}")
            if stats:
                rows = [o.decode("utf-8") for o in out]
            else:
                rows = []
                if os.path.exists(rows_path):
                    with open(rows_path, encoding="utf-8") as f:
                        rows = [l for l in f if l.strip()]
            by_source = {}
            for r in rows:
                row = json.loads(r)
                row["source"] = names.get(row["source"], row["source"])
                text = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
                by_source.setdefault(row["source"], []).append(text)
                yield ("row", row["source"], text)
            bad = {path for path, _ in failed}
            if not stats:
                for local in files:
                    path = names[local]
                    if path in bad:
                        continue
                    cleaned = os.path.join(out_dir, os.path.basename(local))
                    with open(cleaned, "rb") as f:
                        data = f.read()
                    yield ("file", path, data, by_source.get(path, []))
            for path, message in failed:
                yield ("failed", path, message)
            yield ("meta", len(files), skipped_of(err), told_of(err, names))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    return task


# ---------------------------------------------------------------------------
# On the driver


def session(master):
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName("ctxclean").config("spark.ui.showConsoleProgress", "false")
    if master:
        b = b.master(master)
    elif not SparkConf().contains("spark.master"):
        # Run with python, not spark-submit: this machine's cores.
        b = b.master("local[*]")
    return b.getOrCreate()


def expand(sc, inputs, patterns=None):
    """Every file of the inputs (files, folders walked recursively, globs),
    on any Hadoop file system, sorted, as URIs."""
    jvm = sc._jvm
    conf = sc._jsc.hadoopConfiguration()
    out = []
    import fnmatch

    for spec in inputs:
        path = jvm.org.apache.hadoop.fs.Path(spec)
        fs = path.getFileSystem(conf)
        statuses = fs.globStatus(path)
        if statuses is None or len(statuses) == 0:
            raise Usage(f"{spec}: no such file or folder")
        stack = list(statuses)
        found = []
        while stack:
            st = stack.pop()
            if st.isDirectory():
                stack.extend(fs.listStatus(st.getPath()))
            else:
                name = st.getPath().getName()
                if name.startswith(".") or name.startswith("_"):
                    continue
                if patterns and not any(fnmatch.fnmatch(name, g) for g in patterns):
                    continue
                found.append(st.getPath().toString())
        out.extend(sorted(found))
    return out


def existing(sc, paths):
    """Those of `paths` that exist, on their Hadoop file systems."""
    jvm, conf = sc._jvm, sc._jsc.hadoopConfiguration()
    out = []
    for p in paths:
        if p:
            path = jvm.org.apache.hadoop.fs.Path(p)
            if path.getFileSystem(conf).exists(path):
                out.append(p)
    return out


def located_error(sc, exc, partitions):
    """The message of a failed job: ctxclean's error with its file and line
    in the dataset, when a task said where."""
    text = str(exc)
    i = text.find(MARK)
    if i < 0:
        return None
    where = json.loads(text[i + len(MARK) : text.index(END, i)])
    file, message = where.get("file"), where["message"]
    if file is None:
        return message
    if "line" not in where:
        return f"{file}: {message}"
    line = where["line"]
    p = where.get("partition")
    if p:
        # Lines of the file's earlier partitions: counted only now, on failure.
        counts = (
            sc.textFile(where["uri"], partitions)
            .mapPartitionsWithIndex(lambda i, it: [sum(1 for _ in it)] if i < p else [])
            .collect()
        )
        line += sum(counts)
    return f"{file}:{line}:{where.get('col', 1)}: {message}"


PROBE_LINES = 20


def probe_task(exe_name, words):
    """Reads a file's first lines as ctxclean reads them: (format,
    conversations) of those lines."""

    def task(batches):
        exe = binary(exe_name)
        argv = [exe, "stats", "--jsonl", "--skip-invalid", "-q", "--jobs", "1"]
        if "--from" in words:  # the command's own reading of the format
            argv += ["--from", words[words.index("--from") + 1]]
        for lines in batches:
            out, code, _ = drive(run(argv, (line + b"\n" for line in lines)))
            if code != 0:
                yield (None, 0)
                continue
            rows = [json.loads(o) for o in out]
            yield (rows[0]["format"] if rows else None, len(rows))

    return task


def check_one_per_line(sc, args, files):
    """The jsonl kind splits files between tasks by lines: a log of one
    message per line (a Claude Code or Codex session) would be cut in pieces.
    Its first lines are read as ctxclean reads them; a file whose lines are
    not each a conversation is a usage error."""
    heads = [sc.textFile(f, use_unicode=False).take(PROBE_LINES) for f in files[:1]]
    heads = [h for h in heads if len(h) > 1]
    if not heads:
        return
    found = sc.parallelize(heads, len(heads)).mapPartitions(
        probe_task(args.ctxclean, args.words)).collect()
    for f, h, (fmt, convs) in zip(files, heads, found):
        if fmt is not None and convs * 2 <= len(h):
            raise Usage(
                f"{shown(f, args.base)} reads as {fmt}, {plural(convs, 'conversation')} in its "
                f"first {len(h)} lines: a log of one message per line, which partitions would "
                f"cut apart; run it with --kind sessions")


def run_jsonl(spark, args, files):
    from pyspark import StorageLevel

    sc = spark.sparkContext
    n = args.partitions or sc.defaultParallelism
    check_one_per_line(sc, args, files)
    want_rows = bool(args.report)
    # Positions in the file (rows, Parquet) need every partition's counts
    # before they are written: two passes over a persisted result. A plain
    # transform writes in one pass and gathers the counts on the side.
    two_pass = args.stats or want_rows or bool(args.parquet)
    acc = None if two_pass else sc.accumulator([], ListParam())
    parts = [
        sc.textFile(f, n, use_unicode=False).mapPartitionsWithIndex(
            jsonl_task(args.ctxclean, args.words, fid, f, args.base, want_rows,
                       bool(args.parquet), acc)
        )
        for fid, f in enumerate(files)
    ]
    results = sc.union(parts) if len(parts) > 1 else parts[0]
    try:
        if two_pass:
            results.persist(StorageLevel.MEMORY_AND_DISK)
            metas = results.filter(lambda r: r[0] == "meta").map(lambda r: r[1:]).collect()
        else:
            if args.output:
                results.saveAsTextFile(args.output)
            else:
                results.count()
            metas = acc.value
    except Exception as e:  # a task failed: say where, as ctxclean would
        message = located_error(sc, e, n)
        if message is None:
            raise
        raise JobFailed(message) from None
    # Lines and conversations before each partition, for positions in the file.
    offsets, running = {}, {}
    for fid, p, lines, convs, *_ in sorted(metas):
        acc = running.setdefault(fid, [0, 0])
        offsets[(fid, p)] = tuple(acc)
        acc[0] += lines
        acc[1] += convs
    off = sc.broadcast(offsets)
    names = sc.broadcast({fid: shown(f, args.base) for fid, f in enumerate(files)})

    def fix(r):
        _, fid, p, text = r
        row = json.loads(text)
        lines, convs = off.value[(fid, p)]
        row["source"] = names.value[fid]
        if "index" in row:
            row["index"] += convs
        if "line" in row:
            row["line"] += lines
        return json.dumps(row, ensure_ascii=False, separators=(",", ":"))

    rows = results.filter(lambda r: r[0] == "row").map(fix)
    summary = {"files": len(files), "lines": sum(m[2] for m in metas),
               "skipped_lines": sum(m[4] for m in metas)}
    told = []
    for fid, p, _, _, _, (kept, counts) in sorted(metas):
        lines, convs = offsets[(fid, p)]
        for kind, source, conv, text in kept:
            where = shown(files[fid], args.base)
            if conv is not None:
                where += f": conversation {conv + convs}"
            told.append((kind, f"{where}: {text}"))
        for kind, n in counts.items():
            summary[kind + "s"] = summary.get(kind + "s", 0) + n
    summary["told"] = told
    summary["conversations"] = sum(m[3] for m in metas)
    if args.output and two_pass:
        results.filter(lambda r: r[0] == "out").map(lambda r: r[3]).saveAsTextFile(args.output)
    if args.report and not args.stats:
        rows.saveAsTextFile(args.report)
    if args.parquet:
        table = results.filter(lambda r: r[0] == "pq").map(fix)
        spark.read.json(table).write.parquet(args.parquet)
    return rows, summary


def run_sessions(spark, args, files):
    from pyspark import StorageLevel

    sc = spark.sparkContext
    n = args.partitions or sc.defaultParallelism
    keep_going = "--keep-going" in args.words
    # binaryFiles takes a comma-separated list of paths.
    data = sc.binaryFiles(",".join(f.replace(",", "\\,") for f in files), n)
    base = args.base
    results = data.map(lambda kv: (shown(kv[0], base), kv[1])).mapPartitions(
        sessions_task(args.ctxclean, args.words, keep_going))
    results.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        metas = results.filter(lambda r: r[0] == "meta").collect()
    except Exception as e:
        message = located_error(sc, e, n)
        if message is None:
            raise
        raise JobFailed(message) from None
    failed = results.filter(lambda r: r[0] == "failed").map(lambda r: (r[1], r[2])).collect()
    rows = results.filter(lambda r: r[0] == "row").map(lambda r: r[2])
    summary = {"files": sum(m[1] for m in metas), "failed": len(failed),
               "skipped_lines": sum(m[2] for m in metas), "told": []}
    for _, _, _, (kept, counts) in metas:
        for kind, source, conv, text in kept:
            where = f"{source}: conversation {conv}: " if conv is not None else ""
            summary["told"].append((kind, where + text))
        for kind, n in counts.items():
            summary[kind + "s"] = summary.get(kind + "s", 0) + n
    for path, message in sorted(failed):
        print(f"{PROG}: failed: {message}", file=sys.stderr)
    cleaned = results.filter(lambda r: r[0] == "file")
    if args.output:
        from pyspark.sql import Row

        spark.createDataFrame(
            cleaned.map(lambda r: Row(path=r[1], content=bytearray(r[2]), report="\n".join(r[3])))
        ).write.parquet(args.output)
    if args.report and not args.stats:
        rows.saveAsTextFile(args.report)
    if args.collect:
        root = common_root([shown(f, args.base) for f in files])
        written = 0
        for _, path, content, _ in cleaned.toLocalIterator():
            rel = relative(path, root)
            target = os.path.join(args.collect, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(content)
            written += 1
        summary["collected"] = written
    return rows, summary


def shown(uri, base):
    """A file's name as the job shows it: its path for a local file, relative
    to `base` (the driver's folder, when every input was given relative);
    its URI otherwise."""
    path = local_path(uri)
    if base and path.startswith(base.rstrip("/") + "/"):
        return path[len(base.rstrip("/")) + 1 :]
    return path


def local_path(uri):
    return uri[len("file:"):] if uri.startswith("file:") else uri


def common_root(paths):
    if len(paths) == 1:
        return os.path.dirname(paths[0]) or "."
    return os.path.commonpath(paths) or "."


def relative(path, root):
    return os.path.relpath(path, root)


def aggregate(spark, rows, top):
    """The stats rows as a DataFrame and its aggregates."""
    from pyspark.sql import functions as F

    df = spark.read.json(rows)
    if not df.columns:
        return df, {"total": {"conversations": 0}}
    sums = ["messages", "tokens", "tool_calls", "tool_results", "images", "image_tokens",
            "opaque_bytes", "logged_requests", "logged_input_tokens",
            "logged_cache_write_tokens", "logged_cache_read_tokens", "logged_output_tokens"]
    total = df.agg(F.count(F.lit(1)).alias("conversations"),
                   *[F.sum(c).alias(c) for c in sums]).first().asDict()
    by_format = [r.asDict() for r in df.groupBy("format").agg(
        F.count(F.lit(1)).alias("conversations"), F.sum("messages").alias("messages"),
        F.sum("tokens").alias("tokens")).orderBy(F.desc("tokens"), "format").collect()]
    roles = ["system", "developer", "user", "assistant", "tool", "function"]
    role_row = df.agg(*[F.sum(f"by_role.{r}.messages").alias(f"{r}_messages") for r in roles],
                      *[F.sum(f"by_role.{r}.tokens").alias(f"{r}_tokens") for r in roles]).first()
    by_role = [{"role": r, "messages": role_row[f"{r}_messages"], "tokens": role_row[f"{r}_tokens"]}
               for r in roles if role_row[f"{r}_messages"]]
    by_tool = []
    if "by_tool" in df.columns and dict(df.dtypes)["by_tool"].startswith("array<struct"):
        by_tool = [r.asDict() for r in df.select(F.explode("by_tool").alias("t")).groupBy("t.tool")
                   .agg(F.sum("t.results").alias("results"), F.sum("t.tokens").alias("tokens"))
                   .orderBy(F.desc("tokens"), "tool").collect()]
    heaviest = [r.asDict() for r in df.orderBy(F.desc("tokens"), "source", "index")
                .select("source", "index", "format", "messages", "tokens").limit(top).collect()]
    return df, {"total": total, "by_format": by_format, "by_role": by_role,
                "by_tool": by_tool, "heaviest": heaviest}


def print_summary(s, out):
    t = s["total"]
    tokenizer = s.get("tokenizer", "")
    print(f"total: {plural(t['conversations'], 'conversation')}, "
          f"{plural(t.get('messages') or 0, 'message')}, "
          f"{t.get('tokens') or 0:,} tokens{f' ({tokenizer})' if tokenizer else ''}"
          + (f", {plural(s['skipped_lines'], 'invalid line')} skipped"
             if s.get("skipped_lines") else ""),
          file=out)
    for title, key, label in (("by format", "by_format", "format"),
                              ("by role", "by_role", "role"), ("by tool", "by_tool", "tool")):
        if s.get(key):
            print(f"{title}:", file=out)
            for r in s[key]:
                n = r.get("conversations", r.get("messages", r.get("results")))
                print(f"  {r[label]:<24} {n:>10,}  {r['tokens']:>14,} tokens", file=out)
    if s.get("heaviest"):
        print("heaviest:", file=out)
        for r in s["heaviest"]:
            print(f"  {r['tokens']:>12,} tokens  {r['source']} #{r['index']}", file=out)


try:
    from pyspark.accumulators import AccumulatorParam
except ImportError:  # only the driver and the tasks need PySpark
    AccumulatorParam = object


class ListParam(AccumulatorParam):
    """An accumulator of lists, concatenated."""

    def zero(self, value):
        return []

    def addInPlace(self, a, b):
        a.extend(b)
        return a


def plural(n, noun):
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


class JobFailed(Exception):
    pass


def main(argv, spark=None):
    """Runs the job; returns the exit code. With `spark`, runs in that
    session and leaves it open."""
    try:
        args = parse_args(argv)
    except Usage as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    own = spark is None
    if own:
        spark = session(args.master)
        spark.sparkContext.setLogLevel(os.environ.get("CTXCLEAN_SPARK_LOG", "ERROR"))
    sc = spark.sparkContext
    try:
        if os.path.isfile(args.ctxclean):
            sc.addFile(os.path.abspath(args.ctxclean))
        if __name__ != "__main__" and not getattr(sc, "_ctxclean_shipped", False):
            # Imported: the tasks' functions are found in this module by
            # name, so the executors need it (once per context).
            sc.addPyFile(os.path.abspath(__file__))
            sc._ctxclean_shipped = True
        try:
            patterns = args.pattern or (["*.json", "*.jsonl", "*.traj"]
                                        if args.kind == "sessions" else None)
            files = expand(sc, args.input, patterns)
        except Usage as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            return 2
        if not files:
            print(f"{PROG}: no input files", file=sys.stderr)
            return 1
        taken = existing(sc, [args.output, args.report, args.parquet, args.stats_out])
        if args.collect and os.path.isdir(args.collect) and os.listdir(args.collect):
            taken.append(args.collect)
        if taken:
            print(f"{PROG}: {taken[0]} exists: the job writes a new folder and replaces "
                  f"nothing; remove it or name another", file=sys.stderr)
            return 2
        runner = run_jsonl if args.kind == "jsonl" else run_sessions
        try:
            rows, summary = runner(spark, args, files)
        except JobFailed as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            return 1
        except Usage as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            return 2
        if args.stats:
            df, agg = aggregate(spark, rows, args.top)
            agg["files"] = summary["files"]
            agg["skipped_lines"] = summary["skipped_lines"]
            if df.columns and "tokenizer" in df.columns:
                first = df.select("tokenizer").first()
                agg["tokenizer"] = first[0] if first else None
            print_summary(agg, sys.stdout)
            if args.stats_out:
                from pyspark.sql import Row

                base = args.stats_out.rstrip("/")
                df.write.parquet(f"{base}/rows")
                for key in ("by_format", "by_role", "by_tool", "heaviest"):
                    if agg[key]:
                        spark.createDataFrame([Row(**r) for r in agg[key]]).coalesce(1) \
                            .write.json(f"{base}/{key}")
            if args.summary_json:
                with open(args.summary_json, "w", encoding="utf-8") as f:
                    json.dump(agg, f, indent=2, default=str)
                    f.write("\n")
        told = summary.get("told", [])
        for kind, text in told[:TOLD_KEPT]:
            print(f"{PROG}: {args.words[0]}: {kind}: {text}", file=sys.stderr)
        for kind in ("note", "warning"):
            more = summary.get(kind + "s", 0) - sum(1 for k, _ in told[:TOLD_KEPT] if k == kind)
            if more > 0:
                print(f"{PROG}: {args.words[0]}: {kind}: {plural(more, kind)} more"
                      + (" (see --report)" if not args.report else " (in the report rows)"),
                      file=sys.stderr)
        parts = [plural(summary["files"], "file")]
        if "conversations" in summary:
            parts.append(plural(summary["conversations"], "conversation"))
        if summary.get("skipped_lines"):
            parts.append(plural(summary["skipped_lines"], "invalid line") + " skipped")
        if summary.get("failed"):
            parts.append(plural(summary["failed"], "file") + " failed")
        print(f"{PROG}: {args.words[0]}: " + ", ".join(parts), file=sys.stderr)
        return 1 if summary.get("failed") else 0
    finally:
        if own:
            spark.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
