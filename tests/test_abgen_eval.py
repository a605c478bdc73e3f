"AbGen-Eval as a benchmark of its own (issue 19): its plan is derived from its run against AbGen's stub."
import json
from scibench.benchmarks.abgen import method as abgen
from scibench.benchmarks.abgen import data as abgen_data
from scibench.benchmarks.abgen import meta_eval as abgen_eval


def test_derived_plan_counts_the_calls_of_a_run_against_the_stub(fake_server, run_bench):
    from scibench.bench import get_benchmark
    from scibench.run import derive_plan, resolve
    b = get_benchmark("abgen_eval")
    assert b.stub_reply is abgen.stub_reply and b.run is abgen_eval.run_eval
    fs = fake_server(reply=b.stub_reply)
    params, ep = dict(model="fake", judge_max_tokens=32), {"fake": {"base_url": fs.base_url}}
    cfg = b.make_config(params)
    [row] = derive_plan(b, cfg, resolve(b, cfg, ep))
    n = len(abgen_data.load_human_eval(split="sample"))
    assert fs.calls == 0 and (row["role"], row["calls"], row["stages"]) == ("model", 4 * n, {"judge": 4 * n})
    meta, d = run_bench("abgen_eval", params, endpoints=ep)
    assert meta["status"] == "complete" and meta["usage"]["model"]["requests"] == row["calls"]
    assert all(o[c]["score"] == 3 for o in json.loads((d / "judge_outputs.json").read_text()) for c in abgen.CRITERIA)
