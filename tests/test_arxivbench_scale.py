"The arXiv index at full size (issue 13 item 6): streamed build, flat memory measured in a fresh process, exact results."
import json, re, sqlite3
import pytest
from scibench.benchmarks.arxivbench import index as ai
from bench import arxivbench as pab
from scibench.core import DataError


def _bad_snapshot(tmp_path, n=300):
    lines = pab._write_fake_snapshot(tmp_path/"snap.json", n).read_bytes().splitlines()
    lines.insert(10, b'{"id": "2101.00001", "title": "broken"')              # bad JSON
    lines.insert(20, json.dumps(dict(id=1234.5, title="t")).encode())           # id not a string
    lines.insert(30, b'{"id": "2101.00009", "title": "caf\xe9"}')               # not UTF-8
    lines.insert(40, b"   ")                                                    # blank: skipped silently
    lines.insert(50, json.dumps(dict(id="https://arxiv.org/abs/math.AG/0601001v2", title="A\u2003 title \n x")).encode())
    p = tmp_path/"bad.json"; p.write_bytes(b"\n".join(lines) + b'\n{"id": "2101.00003", "title": "no newline"}')
    return p


def _rows(path):
    with sqlite3.connect(path) as con: return con.execute("SELECT * FROM papers ORDER BY pk").fetchall()


def test_malformed_lines_skipped_or_raised(tmp_path):
    p = _bad_snapshot(tmp_path)
    a = ai.build_index(p, tmp_path/"a.sqlite")
    assert (a.records, a.skipped, a.lines) == (302, 3, 306)
    assert [(e["line"], e["field"]) for e in a.errors] == [(11, "<json>"), (21, "id"), (31, None)]
    with ai.open_index(tmp_path/"a.sqlite") as ix:
        assert ix.get("math/0601001")["title"] == "A title x" and ix.get("2101.00003")["title"] == "no newline"
    with pytest.raises(DataError, match=r"bad\.json:11: field '<json>': invalid JSON"):
        ai.build_index(p, tmp_path/"s.sqlite", on_error="raise")
    assert not (tmp_path/"s.sqlite").exists() and not list(tmp_path.glob("s.sqlite.tmp*"))


def test_error_messages_unchanged(tmp_path):
    "The JSON error's column is the one `json.loads` gives for the line with its newline, as before."
    p = tmp_path/"s.json"; p.write_bytes(b'{"id": "2101.00001", "title": "broken"\n{"id": "2101.00002", "title": "x"')
    st = ai.build_index(p, tmp_path/"ix.sqlite")
    with pytest.raises(json.JSONDecodeError) as e: json.loads('{"id": "2101.00001", "title": "broken"\n')
    assert st.errors[0]["msg"] == f"{p}:1: field '<json>': invalid JSON: {e.value.msg} at column {e.value.colno}"


@pytest.mark.parametrize("s", ["2101.00001", "0704.0001", "hep-th/9901001", "math.AG/0601001", "Math/0601001", "2101.00001v3",
                               "1412.12345", "0703.0001", "2113.00001", "foo/9901001", "hep-th/0704001", "math/0000000",
                               " 2101.00001", "2101.0001", "١٢٣٤.١٢٣٤٥", "arXiv:2101.00001"])
def test_fast_id_path_matches_normalize_id(s):
    "The snapshot's own id form skips `normalize_id`'s URL handling; every id still comes out exactly as `normalize_id` gives it."
    want = ai.normalize_id(s)
    if want is None:
        with pytest.raises(DataError, match="not an arXiv id"): ai._parse_line(json.dumps(dict(id=s, title="t")), "f", 1)
    else: assert ai._parse_line(json.dumps(dict(id=s, title="t")), "f", 1)[0] == want


def test_whitespace_and_titles_as_before():
    for t in ["  a\u00a0b\u2003c\n\td ", "x\x1cy\x1fz", "\u2028line\u2029", "$K$-theory \\emph{of} x_1", "", "  ", "\n",
              "  We study\nwrapped lines\n", "a \nb", "a\n\nb", "x\u00a0\ny", "\ta b", "a\x85b\n", "plain text"]:
        rec = ai._parse_line(json.dumps(dict(id="2101.00001", title=t, abstract=t)), "f", 1)[1]
        assert rec["title"] == re.sub(r"\s+", " ", t).strip() and rec["abstract"] == t            # the abstract as written
        assert rec.get("title_raw", rec["title"]) == t and ai._squash(rec["abstract"]) == rec["title"]
        old = " ".join(re.findall(r"[a-z0-9]+", re.sub(r"\\[a-zA-Z]+\s*|[${}\\^_]", " ", t.lower()))) if t else ""
        assert ai.norm_title(t) == old


def test_peak_rss_is_the_builds_own(tmp_path):
    "`ru_maxrss` in a child counts the parent's peak (inherited at fork/exec): the build's figure must not."
    big = bytearray(500 << 20); big[::4096] = b"x" * len(big[::4096])          # this process: > 500 MB resident
    p = pab._write_fake_snapshot(tmp_path/"s.json", 2000)
    b = pab.build_in_child(p, tmp_path/"ix.sqlite")
    assert b["records"] == 2000 and 0 < b["peak_rss_mb"] < 450, b
    del big


def test_build_memory_flat_in_records(tmp_path):
    "Peak RSS of the build (fresh process) at 10x the records: the same, once SQLite's capped cache (here 4 MB) is full."
    p = pab._write_fake_snapshot(tmp_path/"big.json", 100_000)
    with open(p, "rb") as f, open(tmp_path/"small.json", "wb") as g: g.writelines(f.readline() for _ in range(10_000))
    s, b = (pab.build_in_child(tmp_path/f"{k}.json", tmp_path/f"{k}.sqlite", cache_mb=4) for k in ("small", "big"))
    assert (s["records"], b["records"]) == (10_000, 100_000)
    assert b["peak_rss_mb"] < 1.1 * s["peak_rss_mb"], (s, b)


def test_bench_full_switch(monkeypatch):
    for v, want in [("", False), ("0", False), ("1", True), ("yes", True)]:
        monkeypatch.setenv("SCIBENCH_BENCH_FULL", v); assert pab.bench_full() is want
    monkeypatch.delenv("SCIBENCH_BENCH_FULL"); assert pab.bench_full() is False


@pytest.mark.parametrize("real_size", [False, True])
def test_fake_snapshot_is_json_dumps_output(tmp_path, real_size):
    lines = pab._write_fake_snapshot(tmp_path/"f.json", 25, real_size=real_size).read_text().splitlines()
    assert len(lines) == 25 and [json.dumps(json.loads(l)) for l in lines] == lines
    assert len({json.loads(l)["id"] for l in lines}) == 25 and all(ai.normalize_id(json.loads(l)["id"]) for l in lines)
    size = sum(map(len, lines)) / len(lines)
    assert 1500 < size < 1800 if real_size else size < 600                    # real snapshot: ~1.6 KB a line
