"""The package gives the command line's answers: same bytes, same report,
same counts, same problems, on every fixture."""

import json
import os
import subprocess

import pytest

import ctxclean
from conftest import ROOT, fixture_files

RECIPES = {
    "trim": '[[step]]\nop = "trim"\nmax-tokens = 200\n',
    "filter-compact": '[[step]]\nop = "filter"\nprevious-cycles = true\n\n'
    '[[step]]\nop = "compact-tools"\nmax-result-tokens = 50\nkeep-last = 1\n',
    "summarize": '[[step]]\nop = "summarize"\nthreshold = 300\nkeep = 2\n',
}


def cli(exe, args, cwd=ROOT):
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_apply_gives_the_bytes_and_report_of_ctxclean_apply(exe, tmp_path, name):
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(RECIPES[name])
    compared = 0
    for path in fixture_files():
        report = tmp_path / "report.json"
        if report.exists():
            report.unlink()
        out = tmp_path / ("out" + os.path.splitext(path)[1])
        r = cli(exe, ["apply", str(recipe), path, "-q", "-o", str(out), "--report", str(report)])
        data = open(os.path.join(ROOT, path), "rb").read()
        if r.returncode != 0:
            with pytest.raises((ctxclean.InputError, ValueError, RuntimeError)):
                ctxclean.apply(data, RECIPES[name], source=path)
            continue
        got = ctxclean.apply(data, str(recipe), source=path)
        want = out.read_bytes() if out.exists() else data
        assert got.body == want, f"{name} {path}: the bytes differ from the command's"
        assert got.report == json.loads(report.read_text()), f"{name} {path}: the report differs"
        compared += 1
    assert compared > 60


def test_steps_as_tables_are_the_recipe_file(tmp_path):
    body = json.load(open(os.path.join(ROOT, "fixtures", "functionary", "test_case.json")))
    as_file = tmp_path / "r.toml"
    as_file.write_text('[[step]]\nop = "trim"\nmax-tokens = 120\nstrategy = "last"\n')
    a = ctxclean.apply(body, [{"op": "trim", "max_tokens": 120, "strategy": "last"}])
    b = ctxclean.apply(body, as_file)
    c = ctxclean.apply(body, as_file.read_text())
    assert a.body == b.body == c.body
    assert a.report["total"]["removed"] > 0


def test_trim_messages_on_dicts_is_ctxclean_trim(exe, tmp_path):
    checked = 0
    for path in fixture_files():
        r = cli(exe, ["convert", "--to", "openai", "-q", path])
        if r.returncode != 0:
            continue
        try:
            body = json.loads(r.stdout)
        except ValueError:
            continue
        msgs = body.get("messages") if isinstance(body, dict) else None
        if not msgs or len(msgs) < 4:
            continue
        src = tmp_path / "in.json"
        src.write_text(json.dumps({"messages": msgs}))
        for budget in (50, 300, 2000):
            out = cli(exe, ["trim", "--max-tokens", str(budget), "-q", str(src)])
            assert out.returncode == 0, out.stderr
            want = json.loads(out.stdout)["messages"]
            assert ctxclean.trim_messages(msgs, max_tokens=budget) == want, f"{path} at {budget}"
            checked += 1
    assert checked >= 30



def trim_by_cli(exe, tmp_path, msgs, *args):
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"messages": msgs}, ensure_ascii=False))
    out = cli(exe, ["trim", *args, "-q", str(src)])
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["messages"]


def test_dicts_are_read_as_json_dumps_writes_them(exe, tmp_path, monkeypatch):
    """The package hands plain dicts to the library without writing their
    JSON; what json.dumps spells its own way (floats, large ints, text
    beyond ASCII), a record no message is read from in the middle, and
    what only json.dumps takes (a tuple, a str subclass, which make the
    package write the JSON after all) all give the command's answer."""
    class Text(str):
        pass

    meta = {"t": 1e16, "x": 0.1, "big": 2**70, "neg": -0.0, "e": 1.5e-7, "ok": True, "none": None}
    plain = [
        {"role": "system", "content": "Be brief. ☃ 日本語", "meta": meta},
        {"role": "user", "content": "the first question, at length " * 30},
        {"role": "exit", "content": "a record no message is read from"},
        {"role": "assistant", "content": "an answer, at length " * 30, "meta": [meta, [1, 2.5]]},
        {"role": "user", "content": "the last question " * 20},
    ]
    odd = [dict(m) for m in plain]
    odd[1]["meta"] = ("a", "tuple")
    odd[4]["content"] = Text(odd[4]["content"])
    written = []
    encode = ctxclean._encode
    monkeypatch.setattr(ctxclean, "_encode", lambda body: written.append(1) or encode(body))
    for msgs, writes in ((plain, False), (odd, True)):
        for args in (["--max-tokens", "40"], ["--max-tokens", "200"], ["--max-tokens", "200", "--allow-partial"],
                     ["--max-tokens", "100000"]):
            written.clear()
            kw = {"max_tokens": int(args[1]), "allow_partial": "--allow-partial" in args}
            got = ctxclean.trim_messages(msgs, **kw)
            assert json.loads(json.dumps(got)) == trim_by_cli(exe, tmp_path, msgs, *args), args
            assert bool(written) == writes, (args, "the JSON was written" if written else "not written")
    # A partial message is the one written; the others are the dicts given.
    got = ctxclean.trim_messages(plain, max_tokens=200, allow_partial=True)
    assert [m is p for m, p in zip(got[-2:], plain[-2:])] == [False, True]
    assert got[0] is plain[0] and got[1]["role"] == "exit" and got[1] is plain[2]
    with pytest.raises(ctxclean.InputError):
        ctxclean.trim_messages([{"role": "user", "content": "hi", "score": float("nan")}], max_tokens=5)



def random_messages(rng):
    """A conversation of random shape: roles, tool calls and results
    (some orphaned), text of every script, and extra fields of every JSON
    kind, nested."""
    def value(depth=0):
        kinds = [lambda: None, lambda: True, lambda: rng.randrange(-10**20, 10**20),
                 lambda: rng.uniform(-1e20, 1e20) * 10.0 ** rng.randrange(-30, 30), text, rng.random, lambda: -0.0,
                 lambda: [value(depth + 1) for _ in range(rng.randrange(3))],
                 lambda: {text(): value(depth + 1) for _ in range(rng.randrange(3))}]
        return kinds[rng.randrange(len(kinds) if depth < 3 else 7)]()

    def text():
        alphabet = "ab ,.\n\t\"\\/日本語éß😀\u2028{}"
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))) * rng.choice([1, 1, 30])

    msgs, calls = [], []
    if rng.random() < 0.7:
        msgs.append({"role": "system", "content": text()})
    for _ in range(rng.randrange(1, 25)):
        r = rng.random()
        if r < 0.35:
            m = {"role": "user", "content": text()}
        elif r < 0.55 and calls:
            m = {"role": "tool", "tool_call_id": calls.pop(0), "content": text()}
        elif r < 0.75:
            ids = [f"call_{rng.randrange(10**6)}" for _ in range(rng.randrange(1, 3))]
            calls += ids
            m = {"role": "assistant", "content": rng.choice([None, text()]), "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": json.dumps({"q": text()})}}
                for i in ids]}
        else:
            m = {"role": "assistant", "content": text()}
        if rng.random() < 0.3:
            m["extra"] = value()
        msgs.append(m)
    return msgs


def test_dicts_read_as_values_clean_as_their_json_text_does():
    """On 400 conversations of random shape, what the library makes of the
    dicts themselves is what it makes of their JSON text: the same
    messages kept, and the same bytes where one was written."""
    import random

    from ctxclean import _native

    rng = random.Random(7)
    recipes = [[{"op": "trim", "max_tokens": 60, "allow_partial": True}], [{"op": "trim", "max_tokens": 300}],
               [{"op": "filter", "previous_cycles": True}]]
    compared = rewritten = 0
    for _ in range(400):
        msgs = random_messages(rng)
        steps = ctxclean._steps(rng.choice(recipes))
        data = json.dumps({"messages": msgs}, ensure_ascii=False).encode()
        try:
            by_text = _native.kept(None, data, steps)
        except _native.NativeInputError:
            with pytest.raises(_native.NativeInputError):
                _native.kept(msgs, None, steps)
            continue
        by_value = _native.kept(msgs, None, steps)
        assert by_value is not None
        assert by_value[0] == by_text[0] and by_value[2:] == by_text[2:], msgs
        assert (by_value[1] is None) == (by_text[1] is None)
        if by_value[1] is not None:
            assert json.loads(by_value[1]) == json.loads(by_text[1])
            rewritten += 1
        compared += 1
    assert compared > 300 and rewritten > 20, (compared, rewritten)


def test_stats_and_validate_are_the_commands(exe):
    for path in fixture_files():
        data = open(os.path.join(ROOT, path), "rb").read()
        r = cli(exe, ["stats", "--json", "-q", path])
        if r.returncode == 0:
            assert ctxclean.stats(data, source=path) == json.loads(r.stdout), path
        v = cli(exe, ["validate", "--json", "-q", path])
        if v.stdout:
            assert ctxclean.validate(data, source=path) == json.loads(v.stdout)["problems"], path


def test_count_tokens_is_what_stats_counts(exe):
    for path in fixture_files()[:40]:
        r = cli(exe, ["stats", "--json", "-q", path])
        if r.returncode != 0:
            continue
        data = open(os.path.join(ROOT, path), "rb").read()
        assert ctxclean.count_tokens(data) == json.loads(r.stdout)["total"]["tokens"], path
        with_model = cli(exe, ["stats", "--json", "-q", "--model", "gpt-4", path])
        assert ctxclean.count_tokens(data, model="gpt-4") == json.loads(with_model.stdout)["total"]["tokens"]


def test_a_convert_step_writes_its_format_as_the_command_does(exe):
    path = os.path.join("fixtures", "functionary", "test_case.json")
    r = cli(exe, ["convert", "--to", "anthropic", "-q", path])
    assert r.returncode == 0, r.stderr
    data = open(os.path.join(ROOT, path), "rb").read()
    got = ctxclean.apply(data, [{"op": "convert", "to": "anthropic"}], source=path)
    assert got.body == r.stdout
    assert json.loads(got.body).get("messages")
