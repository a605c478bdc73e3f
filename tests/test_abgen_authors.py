"""AbGen under protocol `authors` (issue 18, items 1 and 3): the requests of the released code byte for byte
(`yale-nlp/AbGen` utils/inference_prompt.py `build_single_message`, utils/evaluation_prompt.py
`build_<criterion>_single_message`, inference/evaluation.py), and their score_extraction.py. Every expected value here
was worked out from the authors' code (their f-strings, their regexes), on inputs of our own."""
import json
from pathlib import Path
import pytest
from scibench.benchmarks.abgen import method as abgen
import test_abgen_paper as tap

data, fake, released_prompt_file = tap.data, tap.fake, tap.released_prompt_file   # the fixtures and the authors'-form file

GEN_SYSTEM = "Design it. Our own text standing in for theirs.\nThe response should be within 300 words."


def inference_prompt_file(path: Path, text=GEN_SYSTEM) -> Path:
    "A file in the form of the authors' utils/inference_prompt.py (a string constant and functions), written by us."
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'GENERATION_SYSTEM_PROMPT="""{text}"""\n\ndef prepare_user_prompt(example):\n    return ""\n'
                    "raise SystemExit('this file was executed')\n")
    return path


# what openai's `beta.chat.completions.parse` sends for their pydantic model (openai 1.95.1, pydantic 2.11.7):
# `type_to_response_format_param(EVALUATION_RESPONSE)`, `to_strict_json_schema` adding additionalProperties: false
THEIR_FORMAT = {"type": "json_schema", "json_schema": {"name": "EVALUATION_RESPONSE", "strict": True, "schema": {
    "properties": {"explanation": {"title": "Explanation", "type": "string"}, "score": {"title": "Score", "type": "integer"}},
    "required": ["explanation", "score"], "title": "EVALUATION_RESPONSE", "type": "object", "additionalProperties": False}}}


def test_their_format_is_what_openai_builds():
    pydantic = pytest.importorskip("pydantic")
    parsing = pytest.importorskip("openai.lib._parsing._completions")

    class EVALUATION_RESPONSE(pydantic.BaseModel):
        explanation: str
        score: int
    assert parsing.type_to_response_format_param(EVALUATION_RESPONSE) == THEIR_FORMAT


def their_context(e):   # prepare_user_prompt's three pieces, as their f-strings write them (the method: the literal text)
    me = e["main_experiment"]
    return (f"Research Background:\n{e['research_background']}\n" + "Method Section:\nexample['method']\n"
            + f"Main Experiment Setup\n{me['experiment_setup']}\n\n Main Experiment Results\n{me['results']}\n")


def test_authors_requests_byte_for_byte(data, fake, run_bench, tmp_path, monkeypatch):
    fs, bodies = fake(lambda body: '{"explanation": "ok", "score": 4}' if body["messages"][0]["content"] != GEN_SYSTEM else "MY DESIGN")
    reg = tmp_path / "structured.toml"   # an endpoint with OpenAI's structured output, as their judge (beta.chat.completions.parse)
    reg.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake-model"\nstructured = "json_schema"\ntimeout = 5\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    released_prompt_file(data / "abgen" / "released" / "evaluation_prompt.py")
    inference_prompt_file(data / "abgen" / "released" / "inference_prompt.py")
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=1))
    cfg = meta["config"]
    assert (cfg["protocol"], cfg["prompts"], cfg["max_tokens"], cfg["judge_max_tokens"]) == ("authors", "released", 2048, 8192)
    e = abgen.load_abgen("sample")[0]
    a = e["ablation_study"]
    gen = [b for b in bodies if b["messages"][0]["content"] == GEN_SYSTEM]
    assert len(gen) == 1 and gen[0]["messages"] == [
        {"role": "system", "content": GEN_SYSTEM},
        {"role": "user", "content": f"Research Context:\n{their_context(e)}\n\n Design an ablation study about {a['module_name']} "
                                    "based on the research context above."}]
    # the whole body, field for field: openai's chat.completions.create(model, messages, temperature, max_completion_tokens)
    assert gen[0] == dict(model="fake-model", messages=gen[0]["messages"], temperature=1.0, max_completion_tokens=2048)
    assert e["method"] not in gen[0]["messages"][1]["content"]          # their quirk, kept
    judge = [b for b in bodies if b["messages"][0]["content"] != GEN_SYSTEM]
    user = (f"\nResearch Context:\n{their_context(e)}\nBased on the above research context, the following ablation study has been "
            f"designed:\nMY DESIGN\n\nUsing the provided scoring criteria, please evaluate this ablation study, with a particular focus "
            f"on the {a['module_name']}.\n\nFor reference, here is an example ablation study setup from the original paper:\n"
            f"{a['experiment_setup']}\n\nProvide your evaluation according to the specified criteria.\n")
    want = {c: [{"role": "system", "content": f"\nJudge {c} of {a['module_name']}.\n- **Score 5**\n  • best\n- **Score 1**\n  • worst\n"
                                              "Therefore, the score is: X\n"}, {"role": "user", "content": user}] for c in abgen.CRITERIA}
    assert sorted(json.dumps(b["messages"]) for b in judge) == sorted(json.dumps(m) for m in want.values())
    # beta.chat.completions.parse(model, messages, temperature, max_completion_tokens, response_format=EVALUATION_RESPONSE)
    assert all(b == dict(model="fake-model", messages=b["messages"], temperature=1.0, max_completion_tokens=8192,
                         response_format=THEIR_FORMAT) for b in judge)
    rec = json.loads((d / "records.jsonl").read_text().splitlines()[0])
    assert rec["scores"] == dict.fromkeys(abgen.CRITERIA, 4)
    prov = json.loads((d / "meta.json").read_text())["provenance"]["protocol"]
    assert prov["name"] == "authors" and any("example['method']" in q for q in prov["quirks"])


def test_protocol_paper_inserts_the_method_and_scibench_is_ours(data, fake, run_bench):
    fs, bodies = fake()
    meta, _ = run_bench("abgen", dict(model="fake", judge="fake", limit=1, protocol="paper", max_tokens=16, judge_max_tokens=16))
    e = abgen.load_abgen("sample")[0]
    gen = bodies[0]["messages"]
    assert [m["role"] for m in gen] == ["system", "user"] and f"Method Section:\n{e['method']}\n" in gen[1]["content"]
    notes = json.loads((Path(meta["dir"]) / "meta.json").read_text())["provenance"]["protocol"]["notes"]
    assert any("not downloaded" in n for n in notes) and any("max_tokens=16" in n for n in notes)   # said, not hidden
    n = len(bodies)
    run_bench("abgen", dict(model="fake", judge="fake", limit=1, protocol="scibench", max_tokens=16))
    assert [m["role"] for m in bodies[n]["messages"]] == ["user"] and "## Method" in bodies[n]["messages"][0]["content"]


# Judge answers of the shapes where our parser and the authors' score_extraction.py disagree, and around them.
# Expected: what their extract_score returns (0 = no score: for us a judge failure with its reason).
THEIRS = [
    ("The design isolates the module well. Therefore, the score is: 4", 4), ("Therefore, the score is: 5.", 5),
    ("therefore the score is 3", 3), ("THEREFORE, THE SCORE IS: **2**", 2), ("Reasoning here.\n\nTherefore, the score is: [4]", 4),
    ("Score: 4/5", 0), ("Overall a solid plan. I would give it a 4", 4), ("Therefore, the score is: 4.5", 4),
    ("the score is: 4.5", 5), ("Rating: 3", 3), ("Score: 3", 3), ("It changes two variables at once (1 and 2). Weak design.", 0),
    ("Therefore, the score is: 4. Therefore, the score is: 2.", 2),
    ("Therefore, the score is: 3. On reflection, therefore, the score is: 3.", 3), ("The ablation is sound.\n**3**", 3),
    ("```\nTherefore, the score is: 5\n```", 5), ("No score given, just a critique of the design.", 0), ("", 0),
    ("Therefore, the score is: 7", 0), ("Therefore, the score is: 0", 0), ("Final score: 5/5.", 0), ("I rate this 2 out of 5", 0),
    ("Based on these points, 3.", 3), ("My verdict: 4\n\nThis reflects moderate importance.", 0), ("Score 4", 4), ("4", 4),
    ("The score is 4 because it tests the module. It is good.", 0), ("Therefore, the score is: X", 0),
    ("Therefore, the score is: four", 0), ("Therefore, the score is 2 and not 5.", 2), ("Between 3 and 4, I choose 4.", 0),
    ("Therefore,the score is:1", 1), ("Strong design (score 5)!", 5)]


@pytest.mark.parametrize("text,want", THEIRS)
def test_their_score_extraction(text, want):
    assert abgen.authors_extract_score(text) == want
    r = abgen.authors_judge_result(dict(ok=True, text=text, finish_reason="stop", structured=False))
    if want: assert (r["value"], r["failure"]) == (want, None)
    else: assert r["value"] is None and "score_extraction" in r["failure"]   # their 0: a counted failure, never a 0


def test_their_structured_answers_and_zeros_kept():
    res = lambda t: abgen.authors_judge_result(dict(ok=True, text=t, finish_reason="stop", structured=True))
    assert res('{"explanation": "x", "score": 3}')["value"] == 3
    assert res('{"explanation": "x", "score": "4"}')["value"] == 4        # pydantic's lax int
    assert res('{"explanation": "x", "score": 4.5}')["failure"]           # pydantic refuses 4.5: their 0
    assert res('{"rationale": "x", "score": 4}')["failure"]              # explanation is required
    assert "not {explanation, score}" in res('{"explanation": "x"')["failure"]
    recs = [dict(scores=dict(importance=4), generation_failure=None), dict(scores=dict(importance=None), generation_failure=None),
            dict(scores=dict(importance=None), generation_failure="boom")]
    s = abgen.summarize(recs, criteria=("importance",))["importance"]
    assert (s["mean"], s["failures"], s["zeros_kept"]["mean"], s["zeros_kept"]["zeros"]) == (4, 2, 2.0, 1)   # theirs: (4 + 0) / 2


def test_llama_grammar_bounds_their_score():
    "Their schema leaves the score unbounded; behind llama.cpp's grammar (the embedded judge) it is bounded to 1-5, and said."
    from scibench.llm import get_model
    cfg = abgen.ABGEN.make_config(dict(model="local", judge="local"))
    s = abgen.setup_of(cfg, get_model("local"))
    assert s.schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5] and s.schema["required"] == ["explanation", "score"]
    assert "enum" not in abgen.setup_of(cfg).schema["properties"]["score"]          # an OpenAI-style endpoint: theirs exactly
    assert any("bounded to 1-5" in n for n in abgen.protocol_notes(cfg, get_model("local"))["notes"])
