"Per-run report.html, results/index.html and `scibench compare`, checked in a real headless Chromium (skipped without one)."
import html, json, os, re, shutil, subprocess, sys, time
from pathlib import Path
import pytest
from scibench.core import read_jsonl, write_json
from scibench import view
from scibench.records import Ctx

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = sorted(p.parent for p in (ROOT / "results").glob("*/*/*/*/meta.json") if not p.parent.name.startswith("."))
INJECT = "<script>document.body.setAttribute('data-pwned','1')</script><img src=x onerror=\"document.body.setAttribute('data-pwned','2')\"><b>bold</b>"


def chromium() -> str | None:
    "A headless Chromium from the Debian packages (tools/install.sh installs chromium-headless-shell)."
    for name in ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name) or (f"/usr/lib/chromium/{name}" if Path(f"/usr/lib/chromium/{name}").exists() else None)
        if p: return p
    return None


# CI sets SCIBENCH_REQUIRE_BROWSER=1: there a missing browser fails the tests instead of skipping them
needs_browser = pytest.mark.skipif(chromium() is None and not os.environ.get("SCIBENCH_REQUIRE_BROWSER"),
                                   reason="headless Chromium not installed (apt-get install chromium-headless-shell; `make install` does it as root)")


def browse(page: Path, tmp_path, hash: str = "", screenshot: str | None = None, size="1280,2000") -> tuple[str, float]:
    "(DOM after the page's scripts ran, seconds) for file://page#hash; optionally a PNG screenshot under tmp_path."
    assert chromium(), "SCIBENCH_REQUIRE_BROWSER is set but no headless Chromium is installed"
    url = page.resolve().as_uri() + (f"#{hash}" if hash else "")
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars", "--mute-audio",
            f"--user-data-dir={tmp_path / 'chrome-profile'}", f"--window-size={size}", "--virtual-time-budget=3000"]
    t0 = time.time()
    r = subprocess.run(args + ["--dump-dom", url], capture_output=True, text=True, timeout=180)
    dt = time.time() - t0
    assert r.returncode == 0 and "<body" in r.stdout, r.stderr[-2000:]
    if screenshot:
        out = tmp_path / screenshot
        s = subprocess.run(args + [f"--screenshot={out}", url], capture_output=True, text=True, timeout=180)
        assert s.returncode == 0 and out.exists() and out.stat().st_size > 5000, s.stderr[-2000:]
    return r.stdout, dt


def body_attrs(dom: str) -> dict:
    m = re.search(r"<body([^>]*)>", dom)
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1))) if m else {}


def attr(dom: str, elem_id: str, name: str) -> str | None:
    m = re.search(rf'<[^>]*id="{elem_id}"[^>]*>', dom)
    a = m and re.search(rf'{name}="([^"]*)"', m.group(0))
    return a.group(1) if a else None


def text_of(dom: str, elem_id: str) -> str:
    m = re.search(rf'id="{elem_id}"[^>]*>([^<]*)<', dom)
    return m.group(1) if m else ""


@pytest.fixture
def results_copy(tmp_path, monkeypatch):
    "A copy of the committed results/ (reports are written there, never into the repository)."
    d = tmp_path / "results"
    shutil.copytree(ROOT / "results", d, ignore=shutil.ignore_patterns("report.html", "index.html"))
    monkeypatch.setenv("SCIBENCH_RESULTS", str(d))
    if (ROOT / "figures").exists(): shutil.copytree(ROOT / "figures", tmp_path / "figures")
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path / "figures"))
    return d


def make_run(root: Path, bench="abgen", model="m", run="r1", records=(), status="complete", **meta) -> Path:
    d = root / bench / "sample" / model / run; d.mkdir(parents=True)
    write_json(d / "meta.json", dict(bench=bench, run_id=run, status=status, config=dict(model=model, split="sample"),
                                     n=len(records), failures=sum(1 for r in records if r.get("failure")), **meta))
    (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return d


# ----------------------------------------------------------------------------------------- committed runs
@pytest.mark.skipif(not COMMITTED, reason="no committed runs under results/")
def test_committed_runs_have_deterministic_reports_without_absolute_paths(results_copy):
    for d in COMMITTED:
        c = results_copy / d.relative_to(ROOT / "results")
        a = view.report_html(c)
        assert a == view.report_html(c), f"{d}: report not deterministic"
        assert str(ROOT) not in a and str(results_copy) not in a and "/tmp/" not in a, d
        # every record is in the page's data
        data = json.loads(re.search(r'<script type="application/json" id=data>(.*?)</script>', a, re.S).group(1))
        assert [r["i"] for r in data["rows"]] == [str(r["id"]) for r in read_jsonl(d / "records.jsonl", allow_empty=True)]


def test_per_benchmark_views_show_what_a_reader_needs(results_copy):
    by = {d.parent.parent.parent.name: results_copy / d.relative_to(ROOT / "results") for d in COMMITTED}
    if not {"abgen", "arxivbench", "rubrics", "autobench"} <= set(by): pytest.skip("committed sample runs missing")
    def secs(bench):
        run = view.load_run(by[bench]); ctx = Ctx(run)
        return [view.example_view(bench, r, ctx) for r in run["records"]]
    ab = secs("abgen")[0]
    titles = [s[0] for s in ab["x"]]
    assert "Research context" in titles and "Judge (per criterion)" in titles
    pair = next(s for s in ab["x"] if s[1] == "pair")
    assert pair[2][1][0] == "Reference design (paper)" and pair[2][1][1].startswith("Research Objective:")
    ax = next(v for v in secs("arxivbench") if any(s[0].startswith("Listed papers") for s in v["x"]))   # the first that listed any
    papers = next(s for s in ax["x"] if s[0].startswith("Listed papers"))
    assert {"in snapshot", "matched record", "judge: relevant", "judge: match"} <= set(papers[2]["c"])
    assert all(r[3] in ("found", "not found", "no link") or r[3].startswith("malformed") for r in papers[2]["r"])
    ru = secs("rubrics")
    assert any(s[0].startswith("Verdicts · repository") and "files the judge saw" in s[2]["c"] for r in ru for s in r["x"])
    assert any(s[0].startswith("Agent transcript") and "── step 0" in s[2] for r in ru for s in r["x"])
    au = next(v for v in secs("autobench") if not v["f"])   # the first question that was generated
    assert {"Knowledge point", "Filter stages", "Evidence paragraphs"} <= {s[0] for s in au["x"]}


def test_unknown_fields_are_shown_and_missing_ones_skipped(tmp_path):
    d = make_run(tmp_path, "autobench", records=[{"id": "q1", "failure": None, "question": "Q?", "brand_new": {"x": 1}}])
    run = view.load_run(d)
    v = view.example_view("autobench", run["records"][0], Ctx(run))
    other = next(s for s in v["x"] if s[0] == "Other fields")
    assert json.loads(other[2]) == {"brand_new": {"x": 1}}
    assert "Filter stages" not in [s[0] for s in v["x"]]
    view.report_html(d)   # a record with almost nothing still renders


# ----------------------------------------------------------------------------------------- escaping
def test_model_text_is_escaped_in_the_html(tmp_path):
    rec = dict(id="x<1>", failure=f"judge: {INJECT}", design=INJECT, scores={"overall": 3}, rationales={"overall": INJECT})
    d = make_run(tmp_path, records=[rec], status="complete", failures_by_reason={INJECT: 1}, provenance={"note": INJECT})
    page = view.report_html(d)
    assert "<script>document" not in page and "<img src=x" not in page and "<b>bold" not in page
    assert "&lt;script&gt;document" in page   # the header (failures by reason, provenance) escapes server side
    assert page.count("<script") == 2          # the data block and the page's own script, nothing else


@needs_browser
def test_browser_shows_script_and_html_from_a_model_as_text(tmp_path, run_bench, fake_server):
    fs = fake_server(reply=lambda body: json.dumps({"rationale": INJECT, "explanation": INJECT, "score": 3}))   # ours and the authors' field
    meta, d = run_bench("abgen", dict(model="m", judge="m", limit=2, max_tokens=16), endpoints={"m": {"base_url": fs.base_url}})
    assert (d / "report.html").exists(), "execute writes report.html"
    dom, _ = browse(d / "report.html", tmp_path, "open=*", screenshot="escaped.png")
    a = body_attrs(dom)
    assert a.get("data-ready") == "1" and "data-errors" not in a and "data-pwned" not in a
    assert html.escape(INJECT, quote=False) in dom, "the injected markup is shown as text"
    assert "<img src=\"x\"" not in dom and "<b>bold</b>" not in dom


# ----------------------------------------------------------------------------------------- browser
@needs_browser
def test_report_renders_counts_and_filters_in_a_browser(results_copy, tmp_path):
    runs = {d.parent.parent.parent.name: results_copy / d.relative_to(ROOT / "results") for d in COMMITTED}
    if not runs: pytest.skip("no committed runs")
    for bench, d in sorted(runs.items()):
        p = view.write_report(d)
        recs = read_jsonl(d / "records.jsonl", allow_empty=True)
        dom, _ = browse(p, tmp_path, screenshot=f"{bench}.png")
        a = body_attrs(dom)
        assert a.get("data-ready") == "1" and "data-errors" not in a, (bench, a.get("data-errors"))
        assert text_of(dom, "n-total") == str(len(recs)) and attr(dom, "examples", "data-matching") == str(len(recs))
        assert dom.count('class="ex"') == min(len(recs), 100)
        failed = sum(1 for r in recs if r.get("failure"))
        dom, _ = browse(p, tmp_path, "status=failed")
        assert attr(dom, "examples", "data-matching") == str(failed) and dom.count('data-failed="1"') == min(failed, 100)
        first = str(recs[0]["id"])
        dom, _ = browse(p, tmp_path, "q=" + first)
        assert int(attr(dom, "examples", "data-matching")) >= 1 and f'data-id="{html.escape(first)}"' in dom


@needs_browser
def test_score_filter_through_the_url(tmp_path):
    recs = [dict(id=f"e{i}", failure=None, design="d", scores={"overall": i % 5 + 1}) for i in range(30)]
    d = make_run(tmp_path, records=recs)
    p = view.write_report(d)
    dom, _ = browse(p, tmp_path, "metric=overall&min=4&max=5")
    assert attr(dom, "examples", "data-matching") == "12" and "data-errors" not in body_attrs(dom)


@needs_browser
def test_index_lists_every_run_with_a_relative_link_and_renders(results_copy, tmp_path, monkeypatch):
    from scibench.runs import run_dirs
    idx = view.write_index()[0]
    page = idx.read_text()
    assert page == view.index_html(), "deterministic"
    assert str(results_copy) not in page and str(ROOT) not in page
    links = re.findall(r'href="([^"#]+report\.html)"', page)
    assert len(links) == len(run_dirs()) and all(not l.startswith("/") and (results_copy / l).exists() for l in links)
    tables = sorted((results_copy / "tables").glob("*.md"))
    assert all(f'id="t-{t.stem}"' in page for t in tables)
    figs = re.findall(r'<img alt="[^"]*" src="([^"]+)"', page)
    assert len(figs) == len(list((results_copy.parent / "figures").glob("*.png"))) and all((results_copy / f).exists() for f in figs)
    dom, _ = browse(idx, tmp_path, screenshot="index.png")
    a = body_attrs(dom)
    assert a.get("data-ready") == "1" and "data-errors" not in a
    assert attr(dom, "runs", "data-shown") == str(len(run_dirs()))
    dom, _ = browse(idx, tmp_path, "q=arxivbench")
    assert attr(dom, "runs", "data-shown") == str(len([d for d in run_dirs() if "arxivbench" in str(d)]))


def test_make_tables_writes_the_index_and_every_report(run_bench, fake_server, results, tmp_path, monkeypatch):
    from scibench.run import make_tables
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path / "fig"))
    fs = fake_server()
    _, d = run_bench("abgen", dict(model="m", judge="m", limit=2, max_tokens=16), endpoints={"m": {"base_url": fs.base_url}})
    (d / "report.html").unlink()
    paths = make_tables(run_missing=False)
    assert results / "index.html" in paths and (d / "report.html").exists()
    first = (results / "index.html").read_bytes(), (d / "report.html").read_bytes()
    make_tables(run_missing=False)
    assert ((results / "index.html").read_bytes(), (d / "report.html").read_bytes()) == first, "byte for byte"


# ----------------------------------------------------------------------------------------- compare
def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "scibench.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_compare_paired_table_and_refusal(tmp_path):
    a = make_run(tmp_path, model="a", records=[dict(id=f"e{i}", failure=None, scores={"overall": 2, "soundness": 1}) for i in range(20)])
    b = make_run(tmp_path, model="b", records=[dict(id=f"e{i}", failure=None if i else "judge: cut", scores={"overall": 4 if i % 2 else 2,
                                                    "soundness": None if i == 0 else 1}) for i in range(25)])
    c = view.compare_runs(a, b)
    o = next(m for m in c["metrics"] if m["metric"] == "overall")
    assert (c["shared"], c["only_b"], o["n"], o["wins"], o["ties"], o["losses"], o["diff"]) == (20, 5, 20, 10, 10, 0, 1.0)
    assert o["lo"] < 1.0 < o["hi"] and 0 < o["lo"]
    s = next(m for m in c["metrics"] if m["metric"] == "soundness")
    assert s["n"] == 19 and s["unpaired"] == 1, "a failure is counted, never a 0"
    env = {"SCIBENCH_RESULTS": str(tmp_path)}
    r = _cli("compare", "abgen/sample/a", "abgen/sample/b/r1", "--html", str(tmp_path / "cmp.html"), env=env)
    assert r.returncode == 0, r.stderr
    assert "B − A [95% CI]" in r.stdout and "overall" in r.stdout and "1.000 [" in r.stdout and (tmp_path / "cmp.html").exists()
    other = make_run(tmp_path, "arxivbench", model="a", records=[dict(id="x", failure=None)])
    r = _cli("compare", str(a), str(other), env=env)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "different benchmarks or splits" in r.stderr
    r = _cli("compare", "abgen/sample/nobody", str(a), env=env)
    assert r.returncode == 2 and "no run 'abgen/sample/nobody'" in r.stderr


def test_compare_warns_on_a_judge_difference_and_strict_refuses(tmp_path):
    "Issue 21: a paired difference is the model's only when the judge and settings are the same; compare says so."
    recs = [dict(id=f"e{i}", failure=None, scores={"overall": 2 + i % 2}) for i in range(4)]
    a = make_run(tmp_path, model="a", records=recs)
    b = make_run(tmp_path, model="b", records=recs)
    for d, judge, limit in ((a, "gpt", 4), (b, "local", 0)):
        m = json.loads((d / "meta.json").read_text()); m["config"].update(judge=judge, limit=limit)
        (d / "meta.json").write_text(json.dumps(m))
    c = view.compare_runs(a, b)
    assert c["differences"] == ["judge: A 'gpt', B 'local'", "limit: A 4, B 0"]
    env = {"SCIBENCH_RESULTS": str(tmp_path)}
    r = _cli("compare", str(a), str(b), "--html", str(tmp_path / "cmp.html"), env=env)
    assert r.returncode == 0, r.stderr
    assert "warning: the runs differ in more than the model" in r.stdout and "judge: A 'gpt', B 'local'" in r.stdout
    assert "differ in more than the model" in (tmp_path / "cmp.html").read_text()
    r = _cli("compare", str(a), str(b), "--strict", env=env)
    assert r.returncode == 2 and "judge: A 'gpt', B 'local'" in r.stderr and r.stderr.strip().count("\n") == 0
    same = make_run(tmp_path, model="c", records=recs)
    m = json.loads((same / "meta.json").read_text()); m["config"].update(judge="gpt", limit=4)
    (same / "meta.json").write_text(json.dumps(m))
    r = _cli("compare", str(a), str(same), "--strict", env=env)
    assert r.returncode == 0 and "warning" not in r.stdout


def test_view_command_writes_and_prints_the_report(tmp_path):
    d = make_run(tmp_path, records=[dict(id="e1", failure=None, scores={"overall": 3})])
    r = _cli("view", "abgen/sample/m", "--open", env={"SCIBENCH_RESULTS": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (d / "report.html").resolve().as_uri() and (d / "report.html").exists()


# ----------------------------------------------------------------------------------------- scale
def big_run(root: Path, n: int) -> Path:
    words = "ablation study removes the module and compares against the full model on both datasets with three seeds".split()
    recs = []
    for i in range(n):
        design = " ".join(words[(i + k) % len(words)] for k in range(220))   # ~1.4 kB, like a real design
        recs.append(dict(id=f"ex-{i:05d}", failure="judge soundness: no score found" if i % 50 == 0 else None, example_id=f"ex-{i:05d}",
                         module_name=f"module {i % 40}", system="m", judge="j", design=design, finish_reason="stop",
                         scores={"importance": i % 5 + 1, "faithfulness": (i * 7) % 5 + 1, "soundness": None if i % 50 == 0 else (i * 3) % 5 + 1, "overall": (i * 11) % 5 + 1},
                         rationales={c: "the design names the module and the metric" for c in ("importance", "faithfulness", "soundness", "overall")}))
    return make_run(root, records=recs)


@needs_browser
def test_a_10000_example_report_opens_fast(tmp_path, capsys):
    d = big_run(tmp_path, 10_000)
    t0 = time.time(); p = view.write_report(d); t_write = time.time() - t0
    mb = p.stat().st_size / 2**20
    dom, t_open = browse(p, tmp_path, screenshot="big.png")
    a = body_attrs(dom)
    assert a.get("data-ready") == "1" and "data-errors" not in a and text_of(dom, "n-total") == "10000"
    assert dom.count('class="ex"') == 100, "one page of rows is in the DOM, not 10,000"
    dom2, t_filter = browse(p, tmp_path, "status=failed&q=ex-09")
    assert attr(dom2, "examples", "data-matching") == "20"
    with capsys.disabled():
        print(f"\n10,000-example report: {mb:.1f} MiB, written in {t_write:.1f} s; headless Chromium: open + render "
              f"{t_open:.2f} s (scripts done at {a.get('data-render-ms')} ms after navigation start), with a text filter {t_filter:.2f} s")
    assert t_open < 30 and mb < 40


def test_arxivbench_view_shows_the_authors_links(tmp_path):
    "Protocol authors: each link of their parse with its raw id, lookup, their judge's answer and verdict, in its own table."
    link = dict(title="Attention Is All You Need", url="https://arxiv.org/abs/1706.03762v2", id="1706.03762v2", skipped=False,
                found=False, answer=None, verdict="no", failure=None, source="id not found as written: no, no judge call")
    rec = dict(id="cs-000", failure=None, subject="CS", prompt="p", response="r", status="ok", papers=[], authors_links=[link])
    d = make_run(tmp_path, bench="arxivbench", records=[rec], status="complete")
    run = view.load_run(d)
    v = view.example_view("arxivbench", run["records"][0], Ctx(run))
    t = next(s for s in v["x"] if s[0].startswith("The authors' links (1"))
    assert t[2]["r"][0][3] == "1706.03762v2" and t[2]["r"][0][6] == "no" and "not found as written" in t[2]["r"][0][7]
    assert "Other fields" not in [s[0] for s in v["x"]]


# ----------------------------------------------------------------------------------------- a page per model
def hrefs(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"#][^"]*)"', page) if not h.startswith(("http:", "https:"))]


def test_a_page_per_model_with_each_benchmarks_headline_beside_the_papers(results_copy):
    "Issue 21: results/models/<model>.html per model: every benchmark's headline with CI and failures, paper rows, links."
    from scibench.bench import benchmarks
    from scibench.runs import run_dirs
    make_run(results_copy, "abgen", model="big", run="20990101T000000000Z-aaaaaa", records=[],
                 headline=[dict(name="overall", value=3.5, lo=3.25, hi=3.75, n=40, failures=2)])
    paths = view.write_index()
    index, pages = paths[0], paths[1:]
    first = {p: p.read_bytes() for p in pages}
    assert view.write_index(reports=False) == paths and {p: p.read_bytes() for p in pages} == first, "deterministic"
    models = sorted({r.parent.name for r in run_dirs()})
    assert sorted(p.name for p in pages) == sorted(view.model_page_name(m) for m in models)
    assert all(p.parent == results_copy / "models" for p in pages)
    idx = index.read_text()
    assert all(f'href="models/{p.name}"' in idx for p in pages), "index.html links every model's page"
    big = (results_copy / "models" / "big.html").read_text()
    assert "3.50 [3.25, 3.75]" in big and re.search(r"<td>overall</td><td class=n>3.50 \[3.25, 3.75\]</td><td class=n>40</td>"
                                                    r"<td class=n>2</td><td>[^<]*Table 2", big), "value [CI], n, failed, the paper's"
    assert "Not in the tables" in big, "a run the tables leave out says so"
    for p in pages:
        page = p.read_text()
        assert str(results_copy) not in page and str(ROOT) not in page and "/tmp/" not in page
        for h in hrefs(page):
            assert not h.startswith("/") and (p.parent / h).resolve().exists(), (p.name, h)
    if not COMMITTED: return
    local = (results_copy / "models" / "local.html").read_text()
    for b in sorted({r.parent.parent.parent.name for r in COMMITTED}):
        sec = local.split(f'<h2 id="b-{b}">', 1)[1].split("<h2 ", 1)[0]
        assert "<th>value [95% CI]</th>" in sec and "<th>failed</th>" in sec and "<th>paper (published)</th>" in sec, b
        runs = {f"../{r.relative_to(ROOT / 'results').as_posix()}/report.html" for r in COMMITTED
                if r.parent.parent.parent.name == b and r.parent.name == "local"}   # local.html: the model local's runs
        assert {h for h in hrefs(sec) if h.endswith("report.html")} == runs, b   # every run of the model, linked
        for t in view.headline_specs(b):
            block = sec.split(f"<h4>{t.name}</h4>", 1)[1]
            assert "<td>paper</td>" in block, (b, t.name)   # the paper's rows
    for name, b in benchmarks().items():   # a declared list of specs: its headline table holds ours and the paper's
        if isinstance(b.tables, list):
            assert [t for t in view.headline_specs(name) if t.ours and t.paper], name
    ab = local.split('<h2 id="b-abgen">', 1)[1].split("<h2 ", 1)[0].split("<h4>abgen_table2</h4>", 1)[1]
    assert "<td>scibench</td>" in ab and "<td>paper</td>" in ab, "the run's rows beside the paper's"


def test_a_model_page_escapes_a_hostile_model_name_and_old_pages_go(results_copy):
    name = INJECT.replace("/", "_")
    d = make_run(results_copy, "abgen", model=name, run="20990101T000000000Z-bbbbbb",
                 records=[dict(id="e1", failure=f"judge: {INJECT}", scores={"overall": 3})],
                 failures_by_reason={INJECT: 1}, headline=[dict(name=INJECT, value=1.0, n=1, failures=1)])
    m = json.loads((d / "meta.json").read_text()); m["config"].update(model=INJECT, judge=INJECT, protocol=INJECT)
    (d / "meta.json").write_text(json.dumps(m))
    view.write_index(reports=False)
    page_name = view.model_page_name(name)
    assert re.fullmatch(r"[A-Za-z0-9._-]+\.html", page_name) and page_name != view.model_page_name(name + "x")
    page = (results_copy / "models" / page_name).read_text()
    assert "<script>document" not in page and "<img src=x" not in page and "<b>bold" not in page
    assert "&lt;script&gt;document" in page and page.count("<script") == 1   # the page's own script only
    idx = (results_copy / "index.html").read_text()
    assert "<script>document" not in idx and f'href="models/{page_name}"' in idx
    shutil.rmtree(d.parent)
    view.write_index(reports=False)
    assert not (results_copy / "models" / page_name).exists(), "a model without runs keeps no page"


@needs_browser
def test_model_page_renders_and_its_links_open(results_copy, tmp_path):
    name = INJECT.replace("/", "_")
    d = make_run(results_copy, "abgen", model=name, run="20990101T000000000Z-cccccc", records=[], headline=[dict(name=INJECT, value=1.0, n=1)])
    m = json.loads((d / "meta.json").read_text()); m["config"]["model"] = INJECT
    (d / "meta.json").write_text(json.dumps(m))
    view.write_report(d)
    [_, *pages] = view.write_index(reports=False)
    for p in pages:
        dom, _ = browse(p, tmp_path, screenshot=f"{p.stem[:20]}.png", size="1300,1800")
        a = body_attrs(dom)
        assert a.get("data-ready") == "1" and "data-errors" not in a and "data-pwned" not in a, (p.name, a)
        for h in hrefs(dom):
            assert (p.parent / h).resolve().exists(), (p.name, h)
