"""One direction of dependency (issue 19): shared ← benchmarks ← view ← run ← cli, and no import cycles.

Every `import` in the exported package counts, at module level or inside a function (a lazy import is still an arrow).
A module's layer is read from declarations, never from its name: the benchmark modules are `scibench.bench.MODULES`
less the companions `scibench.bench.COMPANIONS` declares (module → the benchmark it is part of; same layer); the
consumers are view, run, cli, perf and the figure modules `scibench.perf.PERF_MODULES` declares; the rest is shared."""
import ast, re
from pathlib import Path
import pytest
from scibench.bench import COMPANIONS, MODULES
from scibench.perf import PERF_MODULES

PKG = Path(__file__).resolve().parent.parent / "scibench"
_stem = lambda m: m.removeprefix("scibench.")
BENCHMARKS = {_stem(m) for m in MODULES} - set(COMPANIONS)
CONSUMERS = {"view", "run", "cli", "perf"} | {_stem(m) for m in PERF_MODULES}
TOP = {"cli"}


def modules() -> list[str]:
    return sorted(p.stem for p in PKG.glob("*.py") if p.stem not in ("__init__", "_modidx"))


def imports(mod: str) -> set[str]:
    "The scibench modules `mod` imports (relative or absolute, anywhere in the file)."
    out = set()
    for n in ast.walk(ast.parse((PKG / f"{mod}.py").read_text(encoding="utf-8"))):
        if isinstance(n, ast.ImportFrom):
            if n.level == 1 and n.module: out.add(n.module.split(".")[0])
            elif n.level == 1: out |= {a.name for a in n.names}
            elif n.module and n.module.startswith("scibench."): out.add(n.module.split(".")[1])
            elif n.module == "scibench": out |= {a.name for a in n.names}
        elif isinstance(n, ast.Import):
            out |= {a.name.split(".")[1] for a in n.names if a.name.startswith("scibench.")}
    return (out & set(modules())) - {mod}


def kind(mod: str) -> str:
    "A benchmark module or one of its declared companions, a declared consumer, or shared."
    if mod in BENCHMARKS or mod in COMPANIONS: return "benchmark"
    if mod in CONSUMERS: return "consumer"
    return "shared"


GRAPH = {m: imports(m) for m in modules()}


def test_the_graph_is_read():
    assert {"core", "llm", "bench", "runs"} <= set(GRAPH) and "core" in GRAPH["llm"] and "bench" in GRAPH["runs"]


def test_the_declarations_name_real_modules():
    "Every declared module exists, each companion belongs to a benchmark module, and no module is declared twice."
    assert BENCHMARKS == {"abgen", "abgen_eval", "rubrics", "autobench", "arxivbench"}
    declared = BENCHMARKS | set(COMPANIONS) | CONSUMERS
    assert declared <= set(GRAPH), sorted(declared - set(GRAPH))
    assert set(COMPANIONS.values()) <= BENCHMARKS and not set(COMPANIONS) & CONSUMERS


def test_every_module_is_exported_from_a_notebook_that_exists():
    "A module whose notebook was renamed or deleted is a stale export: it would be read as shared and mislead the checks."
    for m in GRAPH:
        src = re.search(r"File to edit: \.\./(nbs/\S+\.ipynb)", (PKG / f"{m}.py").read_text(encoding="utf-8"))
        assert src and (PKG.parent / src[1]).exists(), f"{m}.py: no notebook exports it (stale; delete it)"


@pytest.mark.parametrize("mod", [m for m in modules() if kind(m) == "shared"])
def test_shared_modules_never_import_a_benchmark_or_a_consumer(mod):
    bad = {m for m in GRAPH[mod] if kind(m) != "shared"}
    assert not bad, f"shared module {mod} imports {sorted(bad)}"


@pytest.mark.parametrize("mod", [m for m in modules() if kind(m) == "benchmark"])
def test_benchmarks_never_import_run_view_cli_or_perf(mod):
    bad = {m for m in GRAPH[mod] if kind(m) == "consumer"}
    assert not bad, f"benchmark module {mod} imports {sorted(bad)} (read runs through scibench.runs)"


def test_view_reads_benchmarks_through_the_registry_only():
    assert not GRAPH["view"] & (BENCHMARKS | {"run", "cli"}), f"view imports {sorted(GRAPH['view'] & (BENCHMARKS | {'run', 'cli'}))}"


def test_nothing_imports_the_cli():
    assert not [m for m, deps in GRAPH.items() if TOP & deps]


def test_no_import_cycles():
    state: dict = {}
    def visit(m, path):
        state[m] = "open"
        for d in sorted(GRAPH[m]):
            if state.get(d) == "open": raise AssertionError("import cycle: " + " → ".join(path[path.index(d):] + [d]))
            if d not in state: visit(d, path + [d])
        state[m] = "done"
    for m in GRAPH:
        if m not in state: visit(m, [m])


def test_a_cycle_and_a_wrong_arrow_are_caught(monkeypatch):
    "The checks can fail: a graph with a cycle and a shared module importing a benchmark."
    monkeypatch.setitem(GRAPH, "core", GRAPH["core"] | {"abgen"})
    with pytest.raises(AssertionError, match="import cycle"): test_no_import_cycles()
    with pytest.raises(AssertionError, match="imports"): test_shared_modules_never_import_a_benchmark_or_a_consumer("core")


def test_an_undeclared_companion_is_caught(monkeypatch):
    "Take rubrics_cli out of the declaration: it is then shared, and a shared module importing paperbench fails."
    monkeypatch.delitem(COMPANIONS, "rubrics_cli")
    assert kind("rubrics_cli") == "shared"
    with pytest.raises(AssertionError, match="shared module rubrics_cli imports"):
        test_shared_modules_never_import_a_benchmark_or_a_consumer("rubrics_cli")


def test_derived_machinery_is_declared_by_every_benchmark():
    "Every benchmark declares its stages, stub, record and tables; the CLI's benchmark verbs are those with commands."
    from scibench.bench import benchmarks
    from scibench.cli import BENCH_VERBS
    from scibench.perf import all_perf
    bs = benchmarks()
    for name, b in bs.items():
        assert b.stages and b.stub_reply and b.record and b.tables, name
    assert set(BENCH_VERBS) == {n for n, b in bs.items() if b.commands}
    assert {"P1", "P2", "P3", "P4", "P4b", "P5", "P6", "W1", "W2", "W3", "W4", "AB1"} <= set(all_perf())
