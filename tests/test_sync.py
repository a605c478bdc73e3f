"The exported package must match the notebooks (notebooks are the source)."
import shutil, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_scibench_in_sync_with_notebooks(tmp_path):
    for p in ("nbs", "scibench", "pyproject.toml"):
        src = ROOT / p
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / p)
    exe = Path(sys.executable).parent / "nbdev-export"
    subprocess.run([str(exe)], cwd=tmp_path, check=True, capture_output=True, timeout=120)
    diffs = [p.name for p in (ROOT / "scibench").glob("*.py")
             if not (tmp_path / "scibench" / p.name).exists() or (tmp_path / "scibench" / p.name).read_text() != p.read_text()]
    new = [p.name for p in (tmp_path / "scibench").glob("*.py") if not (ROOT / "scibench" / p.name).exists()]
    assert not diffs and not new, f"run nbdev-export and commit: differs {diffs}, missing {new}"
