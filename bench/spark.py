#!/usr/bin/env python3
"""What ctxclean on Spark costs, against the bare CLI on the same corpus.

    python3 bench/spark.py [--mb 200] [--rounds 3] [--data DIR]

Over the seeded benchmark corpus (bench/corpus.py, one conversation per
line), in interleaved rounds, times the chain
`filter --previous-cycles then trim --max-tokens 2000`:

  - the bare CLI, `ctxclean … --jobs 2 -q -o OUT` (start, read, write);
  - the Spark job (spark/ctxclean_spark.py, jsonl kind, text part files) in
    local[1] and local[2], in a session that is already up (a warm-up job
    runs first; the session's start is timed apart);

and in local[1], the fixed cost of a task: the same 8 MB in 64 partitions
against 1 (the difference over 63 tasks). Prints wall times, MB/s and CPU
time of the CLI (user+sys of ctxclean; Spark's CPU spreads over a JVM,
Python workers and ctxclean children, so its wall time is what is compared),
and what they imply for a cluster of N cores.

Needs a release build (`cargo build --release`) and the PySpark environment
of spark/test_spark.py (`python3 spark/test_spark.py` makes it, or this
script does). Run from the repository root.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXE = os.path.join(ROOT, "target", "release", "ctxclean")
CHAIN = ["filter", "--previous-cycles", "then", "trim", "--max-tokens", "2000"]


def corpus(path, mb):
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "corpus.py"), path,
                        "--mb", str(mb)], check=True)
    return path


def cli_round(data, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([EXE, *CHAIN, "--jobs", "2", "-q", "-o", out, data], check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def session_cpu():
    """CPU seconds (user+sys) of every process in this session: the driver,
    the JVM, Python workers, and the ctxclean processes they reaped."""
    sid = os.getsid(0)
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) != sid:  # field 6 of stat: the session id
            continue
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / tick


def spark_inner(master, data, small, work, task_cost):
    """In a fresh session on `master`: the start, a warm-up, the timed job,
    and (with task_cost) the per-task fixed cost. Prints one JSON line."""
    import shutil

    sys.path.insert(0, os.path.join(ROOT, "spark"))
    start = time.perf_counter()
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("ctxclean-bench")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    import ctxclean_spark

    startup = time.perf_counter() - start

    def job(path, parts, out):
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        cpu[0] = session_cpu()
        code = ctxclean_spark.main(["--ctxclean", EXE, "--input", path, "--partitions", str(parts),
                                    "--output", out, "--", *CHAIN, "-q"], spark=spark)
        assert code == 0, code
        wall = time.perf_counter() - t
        cpu[0] = session_cpu() - cpu[0]
        return wall

    cpu = [0.0]

    cores = int(master[len("local["):-1])
    # Partitions of about 32 MB, at least one per core (Spark's own
    # default for a local file is 32 MB splits too).
    parts = max(cores, os.path.getsize(data) // (32 << 20))
    job(small, cores, os.path.join(work, "warm"))
    result = {"startup": startup, "wall": job(data, parts, os.path.join(work, "out"))}
    result["cpu"] = cpu[0]
    if task_cost:
        one = statistics.median(job(small, 1, os.path.join(work, "t1")) for _ in range(3))
        many = statistics.median(job(small, 64, os.path.join(work, "t64")) for _ in range(3))
        result["task"] = (many - one) / 63
    spark.stop()
    print(json.dumps(result))


def spark_round(py, master, data, small, work, task_cost):
    # In a session of its own, so that its processes' CPU time can be summed.
    r = subprocess.run([py, os.path.abspath(__file__), "--inner", master, data, small, work,
                        "1" if task_cost else "0"], start_new_session=True,
                       capture_output=True, text=True, env=dict(os.environ, PYSPARK_PYTHON=py))
    if r.returncode != 0:
        sys.exit(f"bench/spark.py: the {master} run failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        master, data, small, work, task = sys.argv[2:7]
        return spark_inner(master, data, small, work, task == "1")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", help="keep the corpora in DIR for reruns")
    args = ap.parse_args()
    if not os.path.exists(EXE):
        sys.exit("bench/spark.py: build first: cargo build --release")
    sys.path.insert(0, os.path.join(ROOT, "spark"))
    import test_spark

    test_spark.ensure_java()
    py = test_spark.venv_python()
    data_dir = args.data or tempfile.mkdtemp(prefix="ctxclean-spark-bench-")
    os.makedirs(data_dir, exist_ok=True)
    data = corpus(os.path.join(data_dir, f"corpus-{args.mb}mb.jsonl"), args.mb)
    small = corpus(os.path.join(data_dir, "corpus-8mb.jsonl"), 8)
    mb = os.path.getsize(data) / 1e6
    work = tempfile.mkdtemp(prefix="ctxclean-spark-out-")
    cli_walls, cli_cpus, runs = [], [], {"local[1]": [], "local[2]": []}
    for r in range(args.rounds):
        wall, cpu = cli_round(data, os.path.join(work, "cli.jsonl"))
        cli_walls.append(wall)
        cli_cpus.append(cpu)
        for master in runs:
            runs[master].append(spark_round(py, master, data, small, work,
                                            task_cost=master == "local[1]"))
        print(f"round {r + 1}/{args.rounds}: cli {wall:.2f} s, "
              + ", ".join(f"{m} {v[-1]['wall']:.2f} s" for m, v in runs.items()), flush=True)
    cli = statistics.median(cli_walls)
    cli_cpu = statistics.median(cli_cpus)
    one = statistics.median(x["wall"] for x in runs["local[1]"])
    two = statistics.median(x["wall"] for x in runs["local[2]"])
    one_cpu = statistics.median(x["cpu"] for x in runs["local[1]"])
    two_cpu = statistics.median(x["cpu"] for x in runs["local[2]"])
    start = statistics.median(x["startup"] for x in runs["local[1]"] + runs["local[2]"])
    task = statistics.median(x["task"] for x in runs["local[1]"])
    print()
    print(f"corpus: {mb:.0f} MB, {args.rounds} interleaved rounds, medians; "
          f"`{' '.join(CHAIN)}`; CPU is user+sys of every process of the run")
    print(f"  ctxclean --jobs 2   {cli:6.2f} s wall {mb / cli:6.1f} MB/s   "
          f"CPU {cli_cpu:6.2f} s = {cli_cpu / mb * 1000:5.1f} ms/MB")
    print(f"  Spark local[1]      {one:6.2f} s wall {mb / one:6.1f} MB/s   "
          f"CPU {one_cpu:6.2f} s = {one_cpu / mb * 1000:5.1f} ms/MB")
    print(f"  Spark local[2]      {two:6.2f} s wall {mb / two:6.1f} MB/s   "
          f"CPU {two_cpu:6.2f} s = {two_cpu / mb * 1000:5.1f} ms/MB  ({one / two:.2f}x local[1] "
          f"wall, {cli / two:.2f}x the CLI's speed)")
    print(f"  session start       {start:6.2f} s  (JVM and SparkSession, once per job)")
    print(f"  fixed cost of a task {task * 1000:5.0f} ms wall (8 MB in 64 partitions vs 1, "
          f"local[1])")
    per_mb = two_cpu / mb
    print()
    print(f"  Spark spends {two_cpu / cli_cpu:.1f}x the CPU of the bare CLI on the same work "
          f"(the lines cross the JVM and a Python worker both ways).")
    print(f"  At {per_mb * 1000:.1f} ms of CPU per MB, N busy cores move about "
          f"N / {per_mb:.4f} = N x {1 / per_mb:.0f} MB/s (200 cores: "
          f"{200 / per_mb / 1000:.1f} GB/s), if storage keeps up.")
    print(f"  A task's fixed cost is worth {task / per_mb:.0f} MB of work: with partitions "
          f"of 128 MB it is {task / (128 * per_mb) * 100:.0f}% of a task.")


if __name__ == "__main__":
    main()
