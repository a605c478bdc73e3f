"""One direction of dependency: shared ← benchmarks ← view ← run ← cli, and no import cycles.

Every `import` in the exported package counts, at module level or inside a function (a lazy import is still an arrow).
A module's layer is read from where it lives, never from a list: `scibench/benchmarks/<name>/` is a benchmark's
package (its modules may import each other, never another benchmark's); view, run and cli are the consumers; the rest
is shared, and no shared module names a benchmark."""
import ast, re
from pathlib import Path
import pytest

PKG = Path(__file__).resolve().parent.parent / "scibench"
CONSUMERS = {"view", "run", "cli"}
TOP = {"cli"}


def modules() -> list[str]:
    "Every module, dotted below `scibench` (`llm`, `benchmarks.abgen.method`)."
    out = []
    for p in PKG.rglob("*.py"):
        if p.name == "_modidx.py" or "__pycache__" in p.parts: continue
        r = p.relative_to(PKG).with_suffix("").parts
        out.append(".".join(r[:-1] if r[-1] == "__init__" else r))
    return sorted(m for m in out if m)


MODS = set(modules())


def _resolve(mod: str, n: ast.ImportFrom) -> list[str]:
    "The scibench modules an ImportFrom names, dotted below `scibench`."
    pkg = mod.split(".") if (PKG / mod.replace(".", "/") / "__init__.py").exists() else mod.split(".")[:-1]
    if n.level:
        base = pkg[: len(pkg) - (n.level - 1)] if n.level > 1 else pkg
        base = base + (n.module.split(".") if n.module else [])
    elif n.module and (n.module == "scibench" or n.module.startswith("scibench.")):
        base = n.module.split(".")[1:]
    else:
        return []
    b = ".".join(base)
    named = [f"{b}.{a.name}" if b else a.name for a in n.names]
    return [x for x in named if x in MODS] or ([b] if b in MODS else [])


def imports(mod: str) -> set[str]:
    "The scibench modules `mod` imports (relative or absolute, anywhere in the file)."
    path = PKG / (mod.replace(".", "/") + ".py")
    if not path.exists(): path = PKG / mod.replace(".", "/") / "__init__.py"
    out = set()
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.ImportFrom): out |= set(_resolve(mod, n))
        elif isinstance(n, ast.Import):
            out |= {a.name.split(".", 1)[1] for a in n.names if a.name.startswith("scibench.")} & MODS
    return out - {mod}


def family(mod: str) -> str | None:
    "The benchmark package a module belongs to, or None."
    p = mod.split(".")
    return p[1] if p[0] == "benchmarks" and len(p) > 1 else None


def kind(mod: str) -> str:
    if family(mod): return "benchmark"  # `benchmarks` itself is the folder the registry searches
    if mod in CONSUMERS: return "consumer"
    return "shared"


GRAPH = {m: imports(m) for m in modules()}


def test_the_graph_is_read():
    assert {"core", "llm", "bench", "runs"} <= set(GRAPH) and "core" in GRAPH["llm"] and "bench" in GRAPH["runs"]
    assert {"benchmarks.abgen.method", "benchmarks.rubrics.paperbench"} <= set(GRAPH)
    assert "benchmarks.abgen.method" in GRAPH["benchmarks.abgen.meta_eval"]


def test_the_registry_finds_the_packages():
    from scibench.bench import benchmark_packages
    assert {f"scibench.benchmarks.{b}" for b in ("abgen", "rubrics", "autobench", "arxivbench")} <= set(benchmark_packages())


def test_every_module_is_exported_from_a_notebook_that_exists():
    "A module whose notebook was renamed or deleted is a stale export: it would be read as shared and mislead the checks."
    for p in PKG.rglob("*.py"):
        if p.name == "_modidx.py" or "__pycache__" in p.parts or p == PKG / "__init__.py": continue
        if p.name == "__init__.py" and len(p.read_text().splitlines()) <= 3: continue  # a package's docstring alone
        src = re.search(r"File to edit: (\S+\.ipynb)", p.read_text(encoding="utf-8"))
        assert src and (p.parent / src[1]).resolve().exists(), f"{p}: no notebook exports it (stale; delete it)"


@pytest.mark.parametrize("mod", [m for m in modules() if kind(m) == "shared"])
def test_shared_modules_never_import_a_benchmark_or_a_consumer(mod):
    bad = {m for m in GRAPH[mod] if kind(m) != "shared"}
    assert not bad, f"shared module {mod} imports {sorted(bad)}"


@pytest.mark.parametrize("mod", [m for m in modules() if kind(m) == "benchmark"])
def test_benchmarks_never_import_run_view_cli_or_another_benchmark(mod):
    bad = {m for m in GRAPH[mod] if kind(m) == "consumer" or (family(m) and family(m) != family(mod))}
    assert not bad, f"benchmark module {mod} imports {sorted(bad)} (read runs through scibench.runs)"


def test_view_reads_benchmarks_through_the_registry_only():
    bad = {m for m in GRAPH["view"] if family(m) or m in {"run", "cli"}}
    assert not bad, f"view imports {sorted(bad)}"


def test_nothing_imports_the_cli():
    assert not [m for m, deps in GRAPH.items() if TOP & deps]


def test_no_import_cycles():
    state: dict = {}
    def visit(m, path):
        state[m] = "open"
        for d in sorted(GRAPH[m]):
            if family(d) and family(d) == family(m): continue  # a package's modules import each other lazily
            if state.get(d) == "open": raise AssertionError("import cycle: " + " → ".join(path[path.index(d):] + [d]))
            if d not in state: visit(d, path + [d])
        state[m] = "done"
    for m in GRAPH:
        if m not in state: visit(m, [m])


def test_a_cycle_and_a_wrong_arrow_are_caught(monkeypatch):
    "The checks can fail: a graph with a cycle and a shared module importing a benchmark."
    monkeypatch.setitem(GRAPH, "core", GRAPH["core"] | {"benchmarks.abgen.method"})
    monkeypatch.setitem(GRAPH, "benchmarks.abgen.method", GRAPH["benchmarks.abgen.method"] | {"core"})
    with pytest.raises(AssertionError, match="import cycle"): test_no_import_cycles()
    with pytest.raises(AssertionError, match="imports"): test_shared_modules_never_import_a_benchmark_or_a_consumer("core")


def test_derived_machinery_is_declared_by_every_benchmark():
    "Every benchmark declares its stages, stub, record and tables."
    from scibench.bench import benchmarks
    for name, b in benchmarks().items():
        assert b.stages and b.stub_reply and b.record and b.tables, name


def test_the_lab_finds_every_figure():
    from bench.perf import all_perf
    assert {"P1", "P2", "P3", "P4", "P4b", "P5", "P6", "W1", "W2", "W3", "W4", "AB1"} <= set(all_perf())
