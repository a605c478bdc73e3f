"""The development lab, outside the package: the fake OpenAI-compatible server (`bench.fakeserver`) and the
performance figures of `make bench` (`bench.perf`: P1-P6; one module per benchmark: its whole-run figures)."""
import os


def bench_full() -> bool:
    "`make bench FULL=1` (`SCIBENCH_BENCH_FULL=1`, or true/yes/on): the largest sizes."
    return os.environ.get("SCIBENCH_BENCH_FULL", "").strip().lower() not in ("", "0", "false", "no", "off")


def peak_rss_mb() -> float:
    """This process's peak RSS in MB. On Linux `VmHWM` of `/proc/self/status`: psutil gives no peak RSS there, and
    `ru_maxrss` of a child also counts its parent's peak (inherited at fork and exec); elsewhere `ru_maxrss`."""
    try:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) / 1024 for ln in f if ln.startswith("VmHWM:"))
    except (OSError, StopIteration):
        import resource, sys

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (2**20 if sys.platform == "darwin" else 1024)
