"""W3 (issue 13 item 1): the whole-run Rubrics benchmark at a tiny size: its figures are there and consistent, every
prompt type gets a parsable answer, and the rerun is served from the cache. Timings are printed by `make bench`, never asserted."""
import contextlib, json
import pytest
from bench.fakeserver import FakeServer
from scibench.llm import LLM, ModelSpec, msgs, pipeline
from scibench.judge import parse_choice
from scibench.benchmarks.rubrics.paperbench import grade_prompt
from scibench.benchmarks.rubrics.method import ANSWER_FORMAT, SKILL_REQUEST, RubricsConfig, arun_agent, check_skill, direct_prompt, load_papers, other_papers, parse_rubric
from bench.rubrics import PB_LEAF_COUNTS, PERF, W3_ITEMS, _w3_chain, _w3_steps, w3_reply, w3_rubrics, w3_rubrics_data


def test_w3_data_is_a_real_split_and_every_prompt_type_parses(tmp_path):
    ps = load_papers(root=w3_rubrics_data(3, tmp_path))
    assert [(p["id"], len(p["leaves"]), len(p["repos"])) for p in ps] == [("w3-000", 123, 5), ("w3-001", 174, 5), ("w3-002", 279, 5)]
    assert [len(p["leaves"]) for p in ps] == list(PB_LEAF_COUNTS[:3])
    assert direct_prompt(ps[0]).endswith(ANSWER_FORMAT)
    g = parse_rubric(w3_reply({"messages": msgs(direct_prompt(ps[0]))}))
    assert g["failure"] is None and len(g["items"]) == W3_ITEMS
    for q, want in ((0, "fail"), (4, "pass")):       # quality 0 never passes, 4 always
        v, _, fail = parse_choice(w3_reply({"messages": msgs(grade_prompt("t", "c", f"# reproduction quality: {q}/4\nx"))}), ("pass", "fail"))
        assert (v, fail) == (want, None)
    with FakeServer(reply=w3_reply) as fs:
        llm = LLM(ModelSpec("fake", fs.base_url, "fake"), cache=False, progress=False)
        [a] = pipeline([0], lambda _: arun_agent(llm, ps[1], other_papers(ps, "w3-001"), tmp_path/"ws", RubricsConfig(), extra_turn=SKILL_REQUEST),
                       [llm])
    assert (a["ended"], a["failure"], len(a["items"]), a["steps"]) == ("finish", None, W3_ITEMS, _w3_steps(ps, ps[1]))
    assert check_skill(a["final"]) is None


@pytest.mark.slow   # a whole Rubrics perf run with its rerun: minutes on 2 busy cores (CI runs it)
def test_w3_registered_and_whole_run_tiny(tmp_path):
    assert PERF["W3"] is w3_rubrics
    leaves, items = (20, 30), 8
    r = w3_rubrics(2, small=1, latency_dist=("lognormal", 0.005, 1.0), leaf_counts=leaves, items=items)
    print(json.dumps(r))
    assert r["status"] == "complete" and r["failures"] == 0 and r["items"] == 2 and r["items_per_rubric"] == items
    ps = load_papers(root=w3_rubrics_data(2, tmp_path, leaf_counts=leaves))
    steps = [_w3_steps(ps, p) for p in ps]
    # direct + icl: 1 call per paper; agentic + skill: every step; the distillation: an agent run on the first paper + 1 turn,
    # the same conversation as the agentic setting's on that paper: its steps come from the cache
    calls = 2 + 2 + 2 * sum(steps) + steps[0] + 1
    assert r["calls_generate"] == calls - steps[0]
    assert r["calls_grade"] == 5 * (sum(leaves) + 4 * 2 * items)        # 5 repositories x (reference + 4 settings x 2 papers)
    assert r["agent_chain_calls"] == _w3_chain(ps) == steps[0] + 1 + max(steps) + 1
    for k in ("wall_s", "bound_s", "wall_to_bound", "chain_s", "agent_chain_s", "wall_to_floor", "peak_rss_mb", "peak_rss_mb_small",
              "rss_ratio", "cpu_s", "rerun_wall_s", "rerun_to_cold", "prompt_tokens", "completion_tokens"):
        assert r[k] > 0, k
    assert r["wall_to_floor"] <= r["wall_to_bound"] and r["agent_chain_s"] > r["bound_s"]   # tiny: the agents' chain dominates
    assert r["small_items"] == 1 and 1 <= r["peak_inflight"] <= 128
    assert r["rerun_calls"] == 0 and r["rerun_cached"] == calls + r["calls_grade"]   # the rerun made no call


def test_grade_requests_are_judge_many_s(tmp_path):
    "Each grading call is the request judge_many built (so caches of earlier runs still answer), parsed as judge_many parsed it."
    from scibench.judge import judge_many
    from scibench.llm import get_model
    from scibench.benchmarks.rubrics.paperbench import grade
    class Spy:
        spec = get_model("spy", base_url="http://127.0.0.1:9/v1")
        def __init__(self, texts): self.asked, self.texts = [], texts
        def map(self, reqs, desc=None):
            self.asked += reqs
            return [dict(ok=t is not None, text=t, error=None if t else "HTTP 500", finish_reason="length") for t, _ in zip(self.texts, reqs)]
        def live(self, desc=None, quiet=False): return contextlib.nullcontext()
        async def acall(self, req):                                   # grade's path: one request at a time, in order
            t = self.texts[len(self.asked)]; self.asked.append(req)
            return dict(ok=t is not None, text=t, error=None if t else "HTTP 500", finish_reason="length")
    (tmp_path/"repo").mkdir(); (tmp_path/"repo"/"loss.py").write_text("def loss(): return cross_entropy(smoothed)\n")
    items = [dict(criterion="the smoothed loss", importance=3, ancestors=["the method"]), dict(criterion="the plot", importance=1),
             dict(criterion="the log", importance=2)]
    texts = ['{"answer": "pass", "rationale": "r"}', "I cannot say", None]
    for kw in (dict(), dict(context_chars=500, max_tokens=77)):
        new, old = Spy(texts), Spy(texts)
        [g] = grade(new, [dict(title="t", items=items, repo=tmp_path/"repo")], k=2, **kw)
        recs = judge_many(old, [r.messages[-1]["content"] for r in new.asked], choices=("pass", "fail"), max_tokens=kw.get("max_tokens", 256),
                          max_rationale=300, answer_first=True)
        assert new.asked == old.asked
        assert [(v["verdict"], v["rationale"], v["failure"]) for v in g["verdicts"]] == [(r["value"], r["rationale"], r["failure"]) for r in recs]
        assert g["verdicts"][1]["failure"].endswith("(answer cut at max_tokens)") and g["verdicts"][2]["failure"] == "request failed: HTTP 500"
        assert (g["judged"], g["failures"], g["score"]) == (1, 2, 0.5)   # eq. 1 over every item: 3 of 6


def test_run_grades_each_rubric_as_soon_as_it_exists(fake_server, run_bench, results, tmp_path, monkeypatch):
    """Issue 13 item 2: a generated rubric's grading calls go out while the agents of other settings still run (stage by
    stage, every grading call waited for the last agent step); agents of different papers run at once. The verdicts are those
    of the stage-by-stage `grade`, which finds every answer in the run's cache (the same requests)."""
    import threading
    from scibench.core import read_jsonl
    from scibench.llm import LLM
    from scibench.benchmarks.rubrics.paperbench import grade
    monkeypatch.setenv("SCIBENCH_W3_ITEMS", "4"); monkeypatch.setenv("SCIBENCH_CACHE", str(tmp_path/"cache"))
    ref = {l["requirements"] for p in load_papers("sample") for l in p["leaves"]}
    log, lock = [], threading.Lock()
    def reply(body):
        m = body["messages"]; last = m[-1]["content"]
        kind = ("agent" if m[0]["role"] == "system" and m[0]["content"].startswith("You are an agent") else
                ("grade reference" if last.split("## Criterion\n")[1].split("\n")[0] in ref else "grade generated")
                if last.startswith("You grade") else "generate")
        with lock: log.append((kind, (m[0]["content"], m[1]["content"]) if kind == "agent" else None))
        return w3_reply(body)
    fs = fake_server(reply=reply, latency=0.02)
    reg = tmp_path/"models.toml"
    reg.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake"\nmax_retries = 0\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    meta, out = run_bench("rubrics", dict(model="fake", judge="fake", k=3, judge_eval=False))
    assert meta["status"] == "complete" and meta["failures"] == 0 and meta["n"] == 10
    kinds = [k for k, _ in log]
    last_agent = max(i for i, k in enumerate(kinds) if k == "agent")
    assert kinds.index("grade generated") < last_agent and kinds.index("grade reference") < last_agent
    # agents run at once: some agent's steps are not contiguous in the server's log (one after the other, each agent's were)
    convs = [c for k, c in log if k == "agent"]
    assert any(c != convs[i] for i in range(len(convs)) for c in convs[i:max(j for j, x in enumerate(convs) if x == convs[i])])
    # every row of grades.jsonl is what the stage-by-stage grade gives, from the cache: no new call
    calls, judge = fs.calls, LLM("fake", progress=False)
    rows = read_jsonl(out/"grades.jsonl")
    papers = {p["id"]: p for p in load_papers("sample")}
    recs = {r["id"]: r for r in read_jsonl(out/"records.jsonl")}
    assert len(rows) == sum(len(p["repos"]) for p in papers.values()) * 5
    for row in rows:
        p = papers[row["paper"]]
        items = recs[f"{row['setting']}/{row['paper']}"]["items"]
        [g] = grade(judge, [dict(title=p["title"], items=items, repo=p["repos"][row["repo"]], paper=p["text"])], k=3, context_chars=None,
                    max_tokens=256)
        assert {k: v for k, v in g.items()} == {k: v for k, v in row.items() if k not in ("setting", "paper", "repo", "items")}
    assert fs.calls == calls
