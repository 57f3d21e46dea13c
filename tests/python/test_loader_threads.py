# One frugal.Loader iterated from two threads (issue 47): a pass begun by a second thread while the
# first's is under way is frugal.Error (kind "usage") saying one thread at a time, never a hang (two
# threads in _core.next() of one loader: one of them blocked forever). The first thread's pass goes
# on to its end; a pass begun after it has ended, on any thread, is allowed.
import threading

import pytest

import frugal
from conftest import make_index_zip

TIMEOUT = 60  # seconds: a pass over 40 images takes well under one


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_index_zip(tmp_path_factory.mktemp("data") / "d.zip", 40)


def loader_of(data):
    return frugal.Loader(data, batch_size=4, image_size=16, workers=2, train=False)


def run_thread(target):
    """target() on a daemon thread (a hung one must not keep the test process alive); its outcome."""
    out = {}

    def body():
        try:
            out["value"] = target()
        except BaseException as e:  # noqa: B902: whatever it raised is the outcome
            out["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, out


def test_a_second_thread_starting_a_pass_is_refused_not_hung(data):
    loader = loader_of(data)
    first_batch, second_tried = threading.Event(), threading.Event()

    def first():
        n = 0
        for _ in loader:
            n += 1
            if n == 1:
                first_batch.set()
                assert second_tried.wait(TIMEOUT), "the second thread never tried"
        return n

    def second():
        assert first_batch.wait(TIMEOUT)
        try:
            return sum(1 for _ in loader)
        finally:
            second_tried.set()

    t1, out1 = run_thread(first)
    t2, out2 = run_thread(second)
    t1.join(TIMEOUT)
    t2.join(TIMEOUT)
    assert not t1.is_alive() and not t2.is_alive(), "a thread iterating the loader hung"
    assert "error" not in out1, repr(out1.get("error"))
    assert out1["value"] == len(loader), "the first thread's pass did not go on to its end"
    e = out2.get("error")
    assert isinstance(e, frugal.Error), repr(out2)
    assert e.kind == "usage" and e.exit_code == 2, (e.kind, str(e))
    assert "one thread iterating it at a time" in str(e), str(e)


def test_two_threads_iterating_at_once_end_never_hang(data):
    """The report's case: both loops at once, no coordination. Each thread ends, by its whole pass
    or by the usage error; at least one pass is whole."""
    loader = loader_of(data)
    go = threading.Barrier(2)

    def both():
        go.wait(TIMEOUT)
        return sum(1 for _ in loader)

    threads = [run_thread(both) for _ in range(2)]
    for t, _ in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t, _ in threads), "a thread iterating the loader hung"
    outcomes = [out for _, out in threads]
    for out in outcomes:
        assert out.get("value") == len(loader) or (
            isinstance(out.get("error"), frugal.Error) and out["error"].kind == "usage"), repr(out)
    assert any(out.get("value") == len(loader) for out in outcomes)


def test_an_iterator_handed_to_another_thread_mid_pass_is_refused(data):
    loader = loader_of(data)
    it = iter(loader)
    next(it)
    t, out = run_thread(lambda: next(it))
    t.join(TIMEOUT)
    assert not t.is_alive(), "next() on the other thread hung"
    assert isinstance(out.get("error"), frugal.Error) and out["error"].kind == "usage", repr(out)
    it.close()


def test_passes_one_after_another_on_different_threads_are_allowed(data):
    loader = loader_of(data)
    counts = []
    for _ in range(2):
        t, out = run_thread(lambda: sum(1 for _ in loader))
        t.join(TIMEOUT)
        assert not t.is_alive() and "error" not in out, repr(out)
        counts.append(out["value"])
    assert counts == [len(loader)] * 2
    assert sum(1 for _ in loader) == len(loader)  # and on this thread after them
