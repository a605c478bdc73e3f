"""`make lint`, after `ruff check`: lines at most 120 characters (E501) and functions of complexity at most 12 (C901)
in the exported package.

nbdev writes two things we do not control: the `__all__` list (wrapped at 120 without its `__all__ = ` prefix) and
`__init__.py`'s module list; they are not counted. Every module is at zero; a module given a budget entry may keep
that many while it catches up (its count may only go down), and a module without one must have none."""
import json, subprocess, sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# module -> (long lines, complex functions) still allowed
BUDGET: dict = {}  # every module at (0, 0) now; an entry (long lines, complex functions) lets a module catch up


def generated(path: Path, row: int, lines: dict) -> bool:
    "A line nbdev writes: `scibench/__init__.py`, or the `__all__ = [...]` list."
    if path.name == "__init__.py": return True
    ls = lines.setdefault(path, path.read_text(encoding="utf-8").splitlines())
    i = row - 1
    while i >= 0 and ls[i].startswith(" " * 11 + "'"): i -= 1
    return i >= 0 and ls[i].startswith("__all__ = [")


def main() -> int:
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "E501,C901",
                          "--line-length", "120", "--config", "lint.mccabe.max-complexity=12", "--output-format", "json",
                          "scibench"], cwd=ROOT, capture_output=True, text=True)
    found = json.loads(out.stdout or "[]")
    counts: Counter = Counter()
    lines: dict = {}
    where: dict = {}
    for f in found:
        p = Path(f["filename"])
        if p.name == "_modidx.py" or (f["code"] == "E501" and generated(p, f["location"]["row"], lines)): continue
        counts[(p.stem, f["code"])] += 1
        where.setdefault(p.stem, []).append(f"{p.relative_to(ROOT)}:{f['location']['row']}: {f['code']} {f['message']}")
    bad = []
    for mod in sorted({m for m, _ in counts} | set(BUDGET)):
        long_, cx = counts[(mod, "E501")], counts[(mod, "C901")]
        lim = BUDGET.get(mod, (0, 0))
        if long_ > lim[0] or cx > lim[1]: bad.append(mod)
        if long_ or cx: print(f"lint: {mod}: {long_} lines over 120, {cx} functions over complexity 12 (budget {lim})")
    for mod in bad:
        print("\n".join(where[mod][:40]))
        print(f"lint: {mod} is over its budget {BUDGET.get(mod, (0, 0))}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
