# Under torchrun each rank's frugal.Loader reads its own share: together the ranks see every sample
# once per epoch, and they take the same number of batches.
import json
import os
import subprocess
import sys

from conftest import HERE, make_index_zip


def test_two_ranks_under_torchrun_see_each_sample_once_per_epoch(tmp_path):
    data = make_index_zip(tmp_path / "d.zip", 100)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE] + [p for p in sys.path if p]))
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                        os.path.join(HERE, "torchrun_ranks.py"), data, str(tmp_path / "seen")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    ranks = [json.load(open(tmp_path / f"seen.{i}.json")) for i in range(2)]
    assert [x["rank"] for x in ranks] == [0, 1] and all(x["world"] == 2 for x in ranks)
    assert ranks[0]["batches"] == ranks[1]["batches"]
    total = None
    for epoch in range(2):
        a, b = ranks[0]["epochs"][epoch], ranks[1]["epochs"][epoch]
        assert set(a).isdisjoint(b), f"epoch {epoch}: a sample went to both ranks"
        assert len(a) + len(b) == len(set(a) | set(b))
        total = total or len(a) + len(b)
        assert len(a) + len(b) == total and sorted(a + b) == sorted(set(a + b))
    assert ranks[0]["epochs"][0] != ranks[0]["epochs"][1], "the two epochs had the same order"


def test_a_signal_to_one_rank_stops_every_rank_after_the_same_step(tmp_path):
    import signal
    import time
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE] + [p for p in sys.path if p]))
    out = tmp_path / "stop"
    p = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                          os.path.join(HERE, "torchrun_stop.py"), str(tmp_path / "run"), str(out)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid_file = tmp_path / "stop.1.pid"
    for _ in range(600):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.1)
    time.sleep(1.0)  # some steps
    assert p.poll() is None, "the ranks ended before the signal"
    os.kill(int(pid_file.read_text()), signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    ranks = [json.load(open(tmp_path / f"stop.{i}.json")) for i in range(2)]
    assert [r["code"] for r in ranks] == [75, 75], err[-2000:]
    assert ranks[0]["step"] == ranks[1]["step"] < 2000
    assert "stop of another rank" in err and "signal SIGTERM" in err
