"""`texts.EmbedAhead`: a run that stops before `wait` exits at once, without finishing its queued batches."""
import subprocess, sys, time

CODE = """
import sys, time
import scibench.texts as T
T.embed_map = lambda texts, *a: time.sleep(60)   # a batch that would take a minute
a = T.EmbedAhead(None, False)
a.add(["a rubric item"]); a.add(["another"])
time.sleep(0.2)
raise SystemExit(3)                               # the run fails before wait()
"""


def test_a_failed_run_does_not_wait_for_its_batches():
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", CODE], timeout=50)
    assert r.returncode == 3 and time.monotonic() - t0 < 30   # a minute if the worker thread were waited for


def test_wait_returns_after_every_batch_and_errors_are_left_to_the_run():
    import scibench.texts as T
    done = []
    def fake(texts, *a):
        if texts == ["bad"]: raise ValueError("bad text")
        done.append(texts)
    old, T.embed_map = T.embed_map, fake
    try:
        a = T.EmbedAhead(None, False)
        a.add(["one"]); a.add([]); a.add(["bad"]); a.add(["two", "three"])
        a.wait()
    finally:
        T.embed_map = old
    assert done == [["one"], ["two", "three"]]


def test_one_worker_until_close_and_a_new_one_after():
    import threading
    import scibench.texts as T
    done, gate = [], threading.Event()
    def fake(texts, *a):
        gate.wait(10)
        done.append((texts, threading.current_thread()))
    old, T.embed_map = T.embed_map, fake
    try:
        a = T.EmbedAhead(None, False)
        assert a.worker is None                      # nothing queued: no thread
        a.add(["one"]); a.add(["two"])
        w = a.worker
        assert w is not None and w.is_alive()
        gate.set(); a.wait(); a.add(["three"]); a.wait()
        assert [t for t, _ in done] == [["one"], ["two"], ["three"]] and {th for _, th in done} == {w}
        a.close(); w.join(10)
        assert not w.is_alive() and a.worker is None
        a.add(["four"]); a.close()                   # after close: a new worker embeds it, and ends
        assert done[-1][0] == ["four"] and done[-1][1] is not w
    finally:
        T.embed_map = old
