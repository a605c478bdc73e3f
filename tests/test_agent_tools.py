"The agent tool layer under hostile actions: every bad path or action is an `error:` observation, never an exception or an escape."
import hashlib, json, os
from pathlib import Path
from types import SimpleNamespace
import pytest
from scibench.benchmarks.rubrics import agent
from scibench.benchmarks.rubrics import method as rubrics
from scibench.llm import run_sync

def tree(req):
    return dict(id="root", requirements="root", weight=1, sub_tasks=[
        dict(id="x", requirements=req, weight=1.0, sub_tasks=[], task_category="Code Development")])


PAPER = dict(id="p1", title="A paper", text="# A paper\n\nWe train a model. " * 50, leaves=[], tree=tree("Trains the model"))
EXAMPLE = dict(id="ex", title="An example", leaves=[dict(requirements="Implements X", weight=1.0, task_category="Code Development")],
               tree=tree("Implements X"))


def snapshot(d: Path, skip: Path) -> dict:
    "Every path under `d` (not following symlinks, skipping `skip`) → (kind, size, mtime, sha of a file's bytes)."
    out = {}
    for root, dirs, files in os.walk(d, followlinks=False):
        r = Path(root)
        if r == skip or skip in r.parents: dirs[:] = []; continue
        for n in dirs + files:
            p = r/n
            if p == skip: continue
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else None
            out[str(p.relative_to(d))] = (p.is_symlink(), p.is_dir(), st.st_size, st.st_mtime_ns, digest)
    return out


def file_hash(p):
    try: return hashlib.sha256(Path(p).read_bytes()).hexdigest()
    except OSError: return None


def hostile_workspace(tmp_path: Path) -> Path:
    "A workspace under tmp/parent/ws with hostile furniture: symlink loops, links to outside, a binary file."
    parent = tmp_path/"parent"; parent.mkdir()
    (parent/"secret.txt").write_text("TOP-SECRET outside the workspace\n")
    w = rubrics.make_workspace(parent/"ws", PAPER, [EXAMPLE])
    (w/"loop").symlink_to("loop")                                      # a self loop
    (w/"loopa").symlink_to("loopb"); (w/"loopb").symlink_to("loopa")   # a two-link loop
    (w/"out").symlink_to(parent/"secret.txt")                          # a file outside
    (w/"outdir").symlink_to(parent)                                    # a folder outside
    (w/"dangle").symlink_to(parent/"not-yet.txt")                      # a dangling link to outside
    (w/"bin.dat").write_bytes(bytes(range(256)) * 4)
    return w


@pytest.fixture
def ws(tmp_path): return hostile_workspace(tmp_path)


W, R, L, G, A = "write_file", "read_file", "list_files", "grep", "append_file"
ERR, OK, ANY = "error", "ok", "any"
# (action, expected observation: ERR starts with "error:", OK does not, ANY either)
CASES = [
    # writes to bad places
    (dict(tool=W, path=".", content="x"), ERR),
    (dict(tool=W, path="./", content="x"), ERR),
    (dict(tool=W, path="/", content="x"), ERR),
    (dict(tool=W, path="..", content="x"), ERR),
    (dict(tool=W, path="../x", content="x"), ERR),
    (dict(tool=W, path="../../x", content="x"), ERR),
    (dict(tool=W, path="examples/../../x", content="x"), ERR),
    (dict(tool=W, path="/etc/passwd", content="x"), ANY),               # absolute paths are taken inside the workspace
    (dict(tool=W, path="/tmp/scibench-hostile.txt", content="x"), ANY),
    (dict(tool=W, path="examples", content="x"), ERR),                 # a directory
    (dict(tool=W, path="examples/", content="x"), ERR),
    (dict(tool=W, path="paper.md/x", content="x"), ERR),               # a path under an existing file
    (dict(tool=W, path="a\x00b", content="x"), ERR),                   # NUL byte
    (dict(tool=W, path="x" * 300, content="x"), ERR),                  # over-long name
    (dict(tool=W, path="x" * 5000, content="x"), ERR),
    (dict(tool=W, path="d/" * 2500 + "f", content="x"), ERR),          # over-long path
    (dict(tool=W, path="loop", content="x"), ERR),                     # symlink loops
    (dict(tool=W, path="loopa/x", content="x"), ERR),
    (dict(tool=W, path="out", content="x"), ERR),                      # symlinks to outside
    (dict(tool=W, path="outdir/x", content="x"), ERR),
    (dict(tool=W, path="dangle", content="x"), ERR),
    (dict(tool=W, path="", content="x"), ERR),
    (dict(tool=W, path="   ", content="x"), ERR),
    (dict(tool=W, path=None, content="x"), ERR),
    (dict(tool=W, content="x"), ERR),                                  # no path
    (dict(tool=W, path=5, content="x"), ERR),                          # not a string
    (dict(tool=W, path=["rubric.json"], content="x"), ERR),
    (dict(tool=W, path={"a": 1}, content="x"), ERR),
    (dict(tool=W, path="notes/🦄 ünïcødé.txt", content="ok"), OK),     # unicode and emoji names are fine
    (dict(tool=W, path="a\nb.txt", content="x"), OK),
    (dict(tool=W, path="~/x.txt", content="x"), OK),
    (dict(tool=W, path="examples/../rubric2.json", content="x"), OK),
    # content
    (dict(tool=W, path="c1.txt", content=None), ERR),
    (dict(tool=W, path="c2.txt"), ERR),
    (dict(tool=W, path="c3.txt", content=42), OK),
    (dict(tool=W, path="c4.json", content={"items": []}), OK),
    (dict(tool=W, path="c5.json", content=[1, 2]), OK),
    (dict(tool=W, path="c6.txt", content="y" * 2_000_000), ERR),       # over the size cap
    (dict(tool=W, path="c7.txt", content="lone \ud800 surrogate"), OK),
    (dict(tool=W, path="c8.txt", content="nul \x00 inside"), OK),
    (dict(tool=W, path="c9.txt", content=float("nan")), OK),
    # reads
    (dict(tool=R, path="."), ERR),
    (dict(tool=R, path=".."), ERR),
    (dict(tool=R, path="../secret.txt"), ERR),
    (dict(tool=R, path="/etc/passwd"), ANY),                           # the workspace's etc/passwd written above
    (dict(tool=R, path="examples"), ERR),                              # a directory
    (dict(tool=R, path="bin.dat"), ERR),                               # a binary file
    (dict(tool=R, path="loop"), ERR),
    (dict(tool=R, path="loopb/x"), ERR),
    (dict(tool=R, path="out"), ERR),
    (dict(tool=R, path="outdir/secret.txt"), ERR),
    (dict(tool=R, path="a\x00b"), ERR),
    (dict(tool=R, path="x" * 300), ERR),
    (dict(tool=R, path="x" * 5000), ERR),
    (dict(tool=R, path=None), ERR),
    (dict(tool=R, path=7), ERR),
    (dict(tool=R, path=["paper.md"]), ERR),
    (dict(tool=R, path="nope.md"), ERR),
    (dict(tool=R, path="paper.md"), OK),
    (dict(tool=R, path="paper.md", offset=-5), OK),
    (dict(tool=R, path="paper.md", offset="abc"), OK),
    (dict(tool=R, path="paper.md", offset="12"), OK),
    (dict(tool=R, path="paper.md", offset=10**30), OK),
    (dict(tool=R, path="paper.md", offset=float("inf")), OK),
    (dict(tool=R, path="paper.md", offset=float("nan")), OK),
    (dict(tool=R, path="paper.md", offset={"a": 1}), OK),
    # grep: a file, every file, bad patterns and paths
    (dict(tool=G, path="paper.md", pattern="train"), OK),
    (dict(tool=G, pattern="secret|train"), OK),                        # every workspace file; links that leave are skipped
    (dict(tool=G, path="", pattern="x"), OK),
    (dict(tool=G, path="paper.md", pattern="(unclosed [regex"), OK),   # not a regex: searched as text
    (dict(tool=G, path="paper.md", pattern="(a+)+$"), OK),
    (dict(tool=G, path="paper.md"), ERR),                              # no pattern
    (dict(tool=G, path="paper.md", pattern="  "), ERR),
    (dict(tool=G, path="paper.md", pattern=["x"]), ERR),
    (dict(tool=G, path="../secret.txt", pattern="SECRET"), ERR),
    (dict(tool=G, path="out", pattern="SECRET"), ERR),
    (dict(tool=G, path="outdir/secret.txt", pattern="SECRET"), ERR),
    (dict(tool=G, path="loop", pattern="x"), ERR),
    (dict(tool=G, path="examples", pattern="x"), ERR),
    (dict(tool=G, path="bin.dat", pattern="x"), ERR),
    (dict(tool=G, path="nope.md", pattern="x"), ERR),
    (dict(tool=G, path=5, pattern="x"), ERR),
    # append_file
    (dict(tool=A, path="parts.jsonl", content='{"criterion": "a", "importance": 1}'), OK),
    (dict(tool=A, path="parts.jsonl", content='{"criterion": "b", "importance": 2}'), OK),
    (dict(tool=A, path="../x", content="x"), ERR),
    (dict(tool=A, path="out", content="x"), ERR),
    (dict(tool=A, path="examples", content="x"), ERR),
    (dict(tool=A, path="a1.txt"), ERR),
    (dict(tool=A, path="big.txt", content="y" * 2_000_000), ERR),
    # listing and the tools themselves
    (dict(tool=L), OK),
    (dict(tool=L, path="../.."), OK),
    (dict(tool="delete_file", path="paper.md"), ERR),
    (dict(tool="finish"), ERR),                                        # finish is the loop's, not a file tool
    (dict(path="paper.md"), ERR),                                      # no tool
    (dict(tool=None), ERR),
    (dict(tool=["write_file"], path="x"), ERR),
    (dict(tool={"t": 1}), ERR),
    (dict(tool=3), ERR),
    ("write_file", ERR),                                               # the action is not an object
    (None, ERR),
    (["read_file", "paper.md"], ERR),
]


def test_hostile_matrix_never_raises_nor_escapes(ws):
    top = ws.parent.parent                                   # tmp_path: holds parent/, which holds ws/ and secret.txt
    before, passwd = snapshot(top, ws), file_hash("/etc/passwd")
    assert len(CASES) >= 44
    wrong = []
    for action, want in CASES:
        try: obs = agent.run_tool(ws, action)
        except Exception as e: wrong.append((action, f"raised {type(e).__name__}: {str(e)[:150]}")); continue
        if not isinstance(obs, str): wrong.append((action, f"observation is {type(obs).__name__}")); continue
        if want == ERR and not obs.startswith("error:"): wrong.append((action, f"no error: {obs[:120]!r}"))
        if want == OK and obs.startswith("error:"): wrong.append((action, obs[:200]))
        assert "TOP-SECRET" not in obs and "root:x:" not in obs, (action, obs[:200])    # nothing outside is read
    assert not wrong, "\n".join(f"{str(a)[:80]}: {w}" for a, w in wrong)
    assert snapshot(top, ws) == before                       # nothing outside the workspace was written or touched
    assert not (Path.cwd()/"x").exists() and not (Path.cwd()/"rubric2.json").exists()
    assert file_hash("/etc/passwd") == passwd and not Path("/tmp/scibench-hostile.txt").exists()
    # what the writes that succeeded did: inside the workspace, as text
    assert (ws/"notes"/"🦄 ünïcødé.txt").read_text() == "ok"
    assert (ws/"c3.txt").read_text() == "42" and json.loads((ws/"c4.json").read_text()) == {"items": []}
    assert "\ufffd" in (ws/"c7.txt").read_text() or "?" in (ws/"c7.txt").read_text()
    assert not (ws/"c6.txt").exists() and not (ws/"c1.txt").exists()
    assert (ws/"etc"/"passwd").read_text() == "x"            # "/etc/passwd" is the workspace's etc/passwd
    assert [json.loads(l)["criterion"] for l in (ws/"parts.jsonl").read_text().splitlines()] == ["a", "b"]   # appended, one a line


def test_error_observations_say_what_and_why(ws):
    obs = agent.run_tool(ws, dict(tool=W, path="c.txt", content="y" * 2_000_000))
    assert obs.startswith("error: write_file") and "1000000" in obs.replace(",", "").replace("_", "")
    assert "is a directory" in agent.run_tool(ws, dict(tool=W, path="examples", content="x"))
    obs = agent.run_tool(ws, dict(tool=W, path="paper.md/x", content="x"))
    assert obs.startswith("error: write_file 'paper.md/x':")
    assert str(ws.parent) not in obs                          # reasons name the agent's path, not ours
    assert "binary" in agent.run_tool(ws, dict(tool=R, path="bin.dat"))
    assert agent.run_tool(ws, dict(tool=R, path="paper.md", offset=10**30)).startswith("(offset")
    assert "more characters" in agent.run_tool(ws, dict(tool=R, path="paper.md"), obs_chars=100)
    lst = agent.run_tool(ws, dict(tool=L))
    assert "paper.md" in lst and "examples/ex.json" in lst and "TOP-SECRET" not in lst


def test_list_files_is_capped(ws):
    for i in range(400): (ws/f"f{i:03}.txt").write_text("x")
    obs = agent.run_tool(ws, dict(tool=L), obs_chars=500)
    assert len(obs) < 700 and "more files" in obs


def test_safe_never_raises(ws):
    for rel in [".", "..", "../x", "/etc/passwd", "a\x00b", "x" * 300, "x" * 5000, "loop", "loopa/x", "out", "outdir/x",
                "dangle", "", None, 5, [], {}, b"paper.md", "🦄"]:
        p = agent._safe(ws, rel)
        assert p is None or p == ws.resolve() or ws.resolve() in p.parents, (rel, p)
    assert agent._safe(ws, "paper.md") == (ws/"paper.md").resolve()
    assert agent._safe(ws, "out") is None and agent._safe(ws, "a\x00b") is None and agent._safe(ws, 5) is None


# -- the loop ---------------------------------------------------------------------------------------

HOSTILE = [a for a, _ in CASES if isinstance(a, dict) and a.get("tool") != "finish"]


class ScriptLLM:
    "A stand-in LLM: `map` answers each request with the next scripted text (str, or dict → JSON)."
    def __init__(self, script): self.script, self.n, self.spec = list(script), 0, SimpleNamespace(name="script")
    def map(self, reqs, desc=None):
        out = []
        for _ in reqs:
            s = self.script[self.n % len(self.script)]; self.n += 1
            if isinstance(s, Exception): out.append(dict(ok=False, text=None, error=str(s), finish_reason=None)); continue
            try: text = s if isinstance(s, str) else json.dumps(s)
            except (TypeError, ValueError): text = str(s)
            out.append(dict(ok=True, text=text, error=None, finish_reason="stop"))
        return out
    async def acall(self, req): return self.map([req])[0]


def run_agent(llm, paper, examples, ws, **cfg):
    "One agent run with the config's fields `cfg` (a synchronous caller: `run_sync`)."
    return run_sync(rubrics.arun_agent(llm, paper, examples, ws, rubrics.RubricsConfig(**cfg)))


def generate_rubrics(llm, papers, setting, out, **cfg):
    "Every paper's rubric in one setting, one paper after the other."
    return [run_sync(rubrics.agenerate_rubric(llm, papers, p, setting, out, rubrics.RubricsConfig(**cfg))) for p in papers]


def test_run_agent_survives_hostile_actions(tmp_path):
    rubric = json.dumps({"items": [{"criterion": "Implements the method", "importance": 5, "category": "Code Development"}]})
    hostile = [{"thought": "t", **a} for a in HOSTILE] + ["[1, 2]", '{"tool": ["x"]}', "null", '"just a string"']
    llm = ScriptLLM(hostile + [{"thought": "t", "tool": W, "path": "rubric.json", "content": rubric}, {"thought": "t", "tool": "finish"}])
    a = run_agent(llm, PAPER, [EXAMPLE], tmp_path/"ws", max_steps=len(hostile) + 5)
    assert a["ended"] == "finish" and a["failure"] is None and a["items"][0]["criterion"] == "Implements the method"
    obs = [t["observation"] for t in a["transcript"] if t.get("observation")]
    assert sum(o.startswith("error:") for o in obs) >= 40
    assert not (tmp_path/"x").exists() and not Path("/tmp/scibench-hostile.txt").exists()
    json.dumps(a)                                             # the transcript is JSON-serialisable
    # only hostile actions: the step limit ends the loop with a failure, not an exception
    a = run_agent(ScriptLLM(hostile), PAPER, [], tmp_path/"ws2", max_steps=20)
    assert a["ended"] == "step limit" and a["failure"].startswith("agent wrote no rubric.json") and a["steps"] == 20
    # the agent makes rubric.json a directory: a failure, not an exception
    a = run_agent(ScriptLLM([{"thought": "t", "tool": W, "path": "rubric.json/x", "content": "x"}, {"tool": "finish"}]),
                          PAPER, [], tmp_path/"ws3", max_steps=4)
    assert a["ended"] == "finish" and a["failure"] and not a["items"]


def test_broken_paper_is_a_failure_record(tmp_path):
    "An unusable workspace for one paper, or a paper that breaks the prompt, fails that (setting, paper) only."
    rubric = json.dumps({"items": [{"criterion": "Implements the method", "importance": 5, "category": "Code Development"}]})
    script = [{"tool": W, "path": "rubric.json", "content": rubric}, {"tool": "finish"}]
    papers = [dict(PAPER, id="good"), dict(PAPER, id="bad"), dict(PAPER, id="good2")]
    out = tmp_path/"run"
    (out/"workspaces"/"agentic").mkdir(parents=True)
    (out/"workspaces"/"agentic"/"bad").write_text("a file where the workspace folder goes")
    recs = generate_rubrics(ScriptLLM(script), papers, "agentic", out, max_steps=3)
    by = {r["paper"]: r for r in recs}
    assert [r["paper"] for r in recs] == ["good", "bad", "good2"]
    assert by["good"]["failure"] is None and by["good2"]["failure"] is None and by["good"]["items"]
    assert by["bad"]["failure"].startswith("error: ") and by["bad"]["items"] == [] and by["bad"]["setting"] == "agentic"
    # a paper without text breaks its prompt in direct and icl: a failure record, the others go on
    papers = [dict(PAPER, id="good"), dict(id="notext", title="T", leaves=[], tree=tree("T"))]
    for s in ("direct", "icl"):
        recs = generate_rubrics(ScriptLLM([rubric]), papers, s, out)
        by = {r["paper"]: r for r in recs}
        assert by["good"]["failure"] is None and by["good"]["items"], s
        assert by["notext"]["failure"].startswith("error: ") and by["notext"]["items"] == [], s
    # an LLM that raises: every paper of the setting is a failure record
    class Boom(ScriptLLM):
        async def acall(self, req): raise RuntimeError("boom")
    for s in ("direct", "agentic"):
        recs = generate_rubrics(Boom([]), papers, s, out)
        assert [r["paper"] for r in recs] == ["good", "notext"] and all(r["failure"] and not r["items"] for r in recs), s
        assert recs[0]["failure"] == "error: RuntimeError: boom", s
    # distillation that raises is a failure, not an exception
    ds = run_sync(rubrics.adistill_skill(Boom([]), PAPER, [], tmp_path/"d"))
    assert ds["skill"] is None and "boom" in ds["failure"] and isinstance(ds["run"]["transcript"], list)


def test_rubrics_run_with_hostile_agent(fake_server, tmp_path, monkeypatch, run_bench):
    "A whole rubrics run whose agent answers with hostile actions finishes with a status, and a rerun does too."
    hostile = [{"thought": "t", **a} for a in HOSTILE]
    rubric = json.dumps({"items": [{"criterion": "Implements the training loop", "importance": 5, "category": "Code Development"}]})
    def reply(body):
        sysmsg = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        last = body["messages"][-1]["content"]
        if "## Criterion" in last: return json.dumps({"answer": "pass", "rationale": "fine"})
        if "skill document" in last: return "# Skill\n" + "Read the whole paper, then write one checkable item per claim. " * 6
        if "workspace" in sysmsg:
            n = sum(m["role"] == "assistant" for m in body["messages"])
            task = body["messages"][1]["content"]
            if n < 6: return json.dumps(hostile[(7 * n + len(task)) % len(hostile)])
            if n == 6: return json.dumps({"thought": "t", "tool": W, "path": "rubric.json", "content": rubric})
            return json.dumps({"thought": "t", "tool": "finish"})
        return json.dumps({"items": []})
    fs = fake_server(reply=reply)
    reg = tmp_path/"models.toml"
    reg.write_text(f'[models.h]\nbase_url = "{fs.base_url}"\nmodel = "h"\nmax_retries = 0\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    params = dict(model="h", judge="h", settings="agentic,skill", k=2, max_steps=8, judge_eval=False)
    meta, out = run_bench("rubrics", params)
    assert meta["status"] in ("complete", "partial"), meta.get("error")
    recs = [json.loads(l) for l in (out/"records.jsonl").read_text().splitlines()]
    assert {r["setting"] for r in recs} == {"reference", "agentic", "skill"}
    assert all(r["items"] or r["failure"] for r in recs)
    assert all(r["items"] for r in recs if r["setting"] == "agentic")
    tr = json.loads((out/"transcripts"/"agentic"/"tsls.json").read_text())
    assert sum((t.get("observation") or "").startswith("error:") for t in tr["transcript"]) >= 3
    calls = fs.calls
    meta2, _ = run_bench("rubrics", params)                  # the rerun from the cache ends the same way
    assert meta2["status"] == meta["status"] and fs.calls == calls


# -- grep, append, the forced final write, the step budget (issue 11) ------------------------------------

def test_grep_finds_lines_with_numbers_and_offsets(ws):
    (ws/"paper.md").write_text("# Title\nWe use a learning rate of 3e-4.\nBatch size 128.\nThe learning rate decays.\n")
    obs = agent.run_tool(ws, dict(tool=G, path="paper.md", pattern="learning rate"))
    assert obs.splitlines() == ["paper.md:2 (offset 8): We use a learning rate of 3e-4.", "paper.md:4 (offset 56): The learning rate decays."]
    text = (ws/"paper.md").read_text()
    assert text[56:].startswith("The learning rate")                      # the offset read_file takes
    assert agent.run_tool(ws, dict(tool=R, path="paper.md", offset=56)).startswith("The learning rate")
    every = agent.run_tool(ws, dict(tool=G, pattern="Implements X|batch"))
    assert "paper.md:3" in every and "examples/ex.json" in every and "TOP-SECRET" not in every
    assert agent.run_tool(ws, dict(tool=G, path="paper.md", pattern="zebra")).startswith("no line matches")
    for i in range(200): (ws/f"m{i}.txt").write_text("needle\n" * 3)
    capped = agent.run_tool(ws, dict(tool=G, pattern="needle"), obs_chars=2000)
    assert len(capped) < 2200 and "more matching lines" in capped


def test_step_budget_scales_with_paper_length():
    short, long = dict(PAPER, text="x" * 10_000), dict(PAPER, text="x" * 190_000)
    s, l = rubrics.agent_steps(short, [EXAMPLE]), rubrics.agent_steps(long, [EXAMPLE])
    assert l - s == 190_000 // rubrics.OBS_CHARS - -(-10_000 // rubrics.OBS_CHARS) + 1     # one step per obs_chars read
    assert s >= rubrics.WRITE_STEPS + 2 and l >= 190_000 / rubrics.OBS_CHARS + rubrics.WRITE_STEPS
    assert rubrics.agent_steps(long, [EXAMPLE], max_steps=7) == 7
    assert rubrics.agent_steps(long, [EXAMPLE], obs_chars=4000) > l
    task = rubrics.agent_task(0, l, 190_000)
    assert f"{l} steps" in task and "190000 characters" in task and "append_file" in task
    assert "grep" in rubrics.agent_system() and "append_file" in rubrics.agent_system()


def item(i): return {"criterion": f"Implements component {i} of the method", "importance": 1 + i % 5, "category": "Code Development"}


def test_forced_final_write_saves_the_parts(tmp_path):
    "A model that writes parts but never finishes: at the limit, one forced turn; every part is kept, and the record says so."
    part = lambda lo, hi: "\n".join(json.dumps(item(i)) for i in range(lo, hi))
    script = [{"thought": "t", "tool": W, "path": "rubric.json", "content": part(0, 30)},
              {"thought": "t", "tool": A, "path": "rubric.json", "content": part(30, 60)},
              {"thought": "t", "tool": R, "path": "paper.md"},
              {"thought": "t", "tool": R, "path": "paper.md", "offset": 100},
              {"thought": "t", "tool": A, "path": "rubric.json", "content": part(60, 75)}]     # the answer to the forced turn
    llm = ScriptLLM(script)
    a = run_agent(llm, PAPER, [EXAMPLE], tmp_path/"ws", max_steps=4)
    assert llm.n == 5 and a["steps"] == 4 and a["forced"] and a["ended"] == "step limit"
    forced = a["transcript"][-1]
    assert forced["step"] == "forced" and "last action" in forced["prompt"] and forced["observation"].startswith("appended")
    assert a["failure"] is None and len(a["items"]) == 75 and a["how"] == "json (75 parts)"
    assert "step limit of 4 steps hit" in a["note"] and "forced final write" in a["note"]
    # the forced turn answers with something else: nothing is run, the parts written so far are kept
    a = run_agent(ScriptLLM(script[:4] + [{"thought": "t", "tool": R, "path": "paper.md"}]), PAPER, [EXAMPLE], tmp_path/"ws2", max_steps=4)
    assert len(a["items"]) == 60 and a["forced"] and "wrote nothing" in a["note"] and a["transcript"][-1]["observation"].startswith("not run")
    # a model that never writes: a failure whose reason says the step limit was hit
    a = run_agent(ScriptLLM([{"thought": "t", "tool": L}]), PAPER, [EXAMPLE], tmp_path/"ws3", max_steps=3)
    assert a["items"] == [] and a["failure"] == "agent wrote no rubric.json (step limit of 3 steps hit; the forced final-write turn wrote nothing)"
    # finishing in time: no forced turn
    a = run_agent(ScriptLLM([script[0], {"thought": "t", "tool": "finish"}]), PAPER, [EXAMPLE], tmp_path/"ws4", max_steps=4)
    assert not a["forced"] and a["note"] is None and len(a["items"]) == 30 and a["transcript"][-1]["step"] == 1


def test_finish_without_a_rubric_gets_one_last_write_turn(tmp_path):
    "A model that calls finish before writing rubric.json: one forced turn; its write is kept and the record says why."
    part = "\n".join(json.dumps(item(i)) for i in range(12))
    llm = ScriptLLM([{"thought": "t", "tool": "finish"}, {"thought": "t", "tool": W, "path": "rubric.json", "content": part}])
    a = run_agent(llm, PAPER, [EXAMPLE], tmp_path/"ws", max_steps=6)
    assert llm.n == 2 and a["ended"] == "finish" and a["forced"] and a["failure"] is None and len(a["items"]) == 12
    assert a["transcript"][-1]["prompt"] == rubrics.FINISH_WRITE and a["note"].startswith("finish after 1 steps without rubric.json")
    # it still writes nothing: a failure whose reason says what happened
    a = run_agent(ScriptLLM([{"thought": "t", "tool": "finish"}]), PAPER, [EXAMPLE], tmp_path/"ws2", max_steps=6)
    assert a["items"] == [] and a["failure"] == ("agent wrote no rubric.json (finish after 1 steps without rubric.json; "
                                                 "the forced final-write turn wrote nothing)")


class RecordingLLM(ScriptLLM):
    "A `ScriptLLM` that keeps every request (its messages and schema)."
    def __init__(self, script): super().__init__(script); self.reqs = []
    async def acall(self, req): self.reqs.append(req); return self.map([req])[0]


def test_forced_turn_schema_allows_only_a_write_of_the_rubric(tmp_path):
    "The forced last turn's schema: write_file / append_file of rubric.json with the rubric's items (issue 21: a weak "
    "model that only repeats `finish` gets the grammar of the one action that is carried out); an object is written as JSON."
    llm = RecordingLLM([{"thought": "t", "tool": "finish"},
                        {"thought": "t", "tool": W, "path": "rubric.json", "content": {"items": [item(0), item(1)]}}])
    a = run_agent(llm, PAPER, [EXAMPLE], tmp_path/"ws", max_steps=4, max_items=3)
    assert a["failure"] is None and [i["criterion"] for i in a["items"]] == [item(0)["criterion"], item(1)["criterion"]]
    first, forced = llm.reqs[0].schema, llm.reqs[1].schema
    assert first == agent.action_schema() and "finish" in first["properties"]["tool"]["enum"]
    assert forced["properties"]["tool"]["enum"] == [W, A] and forced["properties"]["path"]["enum"] == ["rubric.json"]
    assert forced["properties"]["content"] == rubrics.rubric_schema(3) and set(forced["required"]) == {"thought", "tool", "path", "content"}
    # a generic task without a write schema keeps the action schema in its forced turn
    task = agent.AgentTask("out.txt", "write now", "write now", 1)
    llm2 = RecordingLLM([{"thought": "t", "tool": L}, {"thought": "t", "tool": W, "path": "out.txt", "content": "x"}])
    out = run_sync(agent.drive(llm2, tmp_path/"ws", [{"role": "user", "content": "go"}], task))
    assert out["text"] == "x" and llm2.reqs[1].schema == agent.action_schema()


def test_skill_turn_asks_for_a_json_document(tmp_path):
    "The skill turn: its schema is SKILL_SCHEMA; the document is `skill_document` of the answer, checked as prose."
    doc = ("# Writing rubrics\n1. Read the whole paper first and list every experiment, dataset, metric and baseline. "
           "2. Write one checkable criterion per implementation step, per experiment run and per reported result. "
           "3. Give importance 5 to the core method and main results, 1 to minor plotting or logging details.")
    llm = RecordingLLM([{"thought": "t", "tool": W, "path": "rubric.json", "content": json.dumps(item(0))},
                        {"thought": "t", "tool": "finish"}, {"skill_document": doc}])
    ds = run_sync(rubrics.adistill_skill(llm, PAPER, [EXAMPLE], tmp_path/"ws", rubrics.RubricsConfig(max_steps=4)))
    assert llm.reqs[-1].schema == rubrics.SKILL_SCHEMA and llm.reqs[-1].messages[-1]["content"] == rubrics.SKILL_REQUEST
    assert ds["failure"] is None and ds["skill"] == doc
    # an action in the document's place is still rejected, with its reason
    llm = RecordingLLM([{"thought": "t", "tool": "finish"}, {"thought": "t", "tool": W, "path": "rubric.json", "content": "x"},
                        {"thought": "t", "tool": "finish", "content": "code"}])
    ds = run_sync(rubrics.adistill_skill(llm, PAPER, [EXAMPLE], tmp_path/"ws2", rubrics.RubricsConfig(max_steps=4)))
    assert ds["skill"] is None and "a JSON action / tool call" in ds["failure"]
