"""The committed runs' requests, pinned: for every run under results/, the first-stage requests the run derives from
its `meta.json` config (role, model, served id, endpoint and the exact body POSTed) hash to what the code before the
standard-parts refactor (a53f3c4: the own HTTP client) derived. With the cache-key function pinned too
(`test_request_key.py`), a rerun of each committed run asks the cache the same keys: zero calls."""
import hashlib, json
from pathlib import Path
import pytest
from scibench.bench import get_benchmark
from scibench.run import derive_requests

ROOT = Path(__file__).resolve().parent.parent
PINNED = {
    "results/abgen/sample/local/20261130T104308717Z-f2a22c": (8, "92542addcd2ae905dc2617f7b811fe221e87b30c112dc40153353047080ef36d"),
    "results/abgen/sample/local/20261130T110523343Z-6eb70f": (8, "92542addcd2ae905dc2617f7b811fe221e87b30c112dc40153353047080ef36d"),
    "results/abgen/sample/local/20261201T102418637Z-acdecf": (8, "92542addcd2ae905dc2617f7b811fe221e87b30c112dc40153353047080ef36d"),
    "results/abgen_eval/sample/local/20261130T105020476Z-e41104": (128, "6f1dd2a61e4445d6aa4af1e01fc3d69715a6cab8e70ef438878d4f55f4f4025b"),
    "results/abgen_eval/sample/local/20261201T103250248Z-e0aee8": (128, "6f1dd2a61e4445d6aa4af1e01fc3d69715a6cab8e70ef438878d4f55f4f4025b"),
    "results/arxivbench/sample/local/20261130T103730374Z-0ca2fb": (26, "361a968eb8bb429c1dce674db262e8a60dbfa1f9187df2c7c0ffaef94161f9ca"),
    "results/arxivbench/sample/local/20261201T103141388Z-826d0c": (26, "361a968eb8bb429c1dce674db262e8a60dbfa1f9187df2c7c0ffaef94161f9ca"),
    "results/autobench/sample/local/20261201T194216738Z-b21985": (15, "b182f494552e76ae6659c62258282d32b294fa6e658cd64d3a4c866f5348fc88"),
    "results/rubrics/sample/local/20261201T191519835Z-3a2bed": (7, "5fd2b1492c62347098f489f3b244e6a7266f9a45aa93b6be829ca017a3916a4b"),
    "results/citeme/sample/local/20261204T150932895Z-f59167": (4, "aa60b79957e5222ce31a15bfa1d1a8d146d35584fb974072a8cbb4ae24a9e37a"),
    "results/citeme/sample/local/20261204T151003261Z-372b3a": (10, "e2cd4abe1379b533ba3cb593eb96de8c36e38247444467f54d022d3998a2365c"),
}


@pytest.mark.parametrize("run", sorted(PINNED))
def test_a_committed_run_sends_the_requests_it_sent(run):
    m = json.loads((ROOT / run / "meta.json").read_text())
    b = get_benchmark(m["bench"])
    rows = derive_requests(b, b.make_config(dict(m["config"])))
    assert (len(rows), hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()) == PINNED[run]


def test_every_committed_run_is_pinned():
    assert sorted(p.parent.relative_to(ROOT).as_posix() for p in ROOT.glob("results/*/*/*/*/meta.json")) == sorted(PINNED)
