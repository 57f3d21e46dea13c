# frugal.Checkpointer in a user's own loop (train_loop.py): SIGKILL at random steps and resume
# bitwise; SIGTERM and a deadline end it saved with exit 75; a disk budget too small refuses before
# anything is written; the files load without frugal; the run folder is claimed as the CLI claims it.
import glob
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch

import frugal
from conftest import HERE, make_index_zip, run_script

LOOP = os.path.join(HERE, "train_loop.py")
STEPS = 24


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_index_zip(tmp_path_factory.mktemp("data") / "d.zip", 90)


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    out = d / "out.pt"
    p = run_script([LOOP, data, str(d / "run"), str(out), "--steps", str(STEPS)], stdout=subprocess.DEVNULL)
    assert p.wait(timeout=300) == 0
    return torch.load(out, weights_only=False)


def assert_same(a, b):
    for k in a["weights"]:
        assert torch.equal(a["weights"][k], b["weights"][k]), k
    sa, sb = a["optimizer"]["state"], b["optimizer"]["state"]
    assert sa.keys() == sb.keys()
    for i in sa:
        for k in sa[i]:
            assert torch.equal(sa[i][k], sb[i][k]), (i, k)
    assert a["optimizer"]["param_groups"] == b["optimizer"]["param_groups"]
    assert a["scheduler"] == b["scheduler"] and a["scaler"] == b["scaler"]
    assert torch.equal(a["next"][0], b["next"][0]) and torch.equal(a["next"][1], b["next"][1])
    assert a["random"] == b["random"] and a["numpy"] == b["numpy"] and torch.equal(a["torch"], b["torch"])


def wait_for_step(p, at_least):
    """Reads the loop's "step N" lines until N >= at_least; returns N."""
    for line in p.stdout:
        if line.startswith("step ") and int(line.split()[1]) >= at_least:
            return int(line.split()[1])
    raise AssertionError(f"the loop ended (exit {p.wait()}) before step {at_least}")


def test_killed_three_times_at_random_steps_it_resumes_as_if_never_stopped(data, reference, tmp_path):
    run, out = tmp_path / "run", tmp_path / "out.pt"
    rng = random.Random(int(time.time()))
    kills = 0
    last = 0
    while kills < 3:
        p = run_script([LOOP, data, str(run), str(out), "--steps", str(STEPS), "--sleep", "0.05"],
                       stdout=subprocess.PIPE, text=True)
        target = min(STEPS - 1, last + rng.randint(3, 6))
        reached = wait_for_step(p, target)
        while not glob.glob(str(run / "ckpt-*.safetensors")):  # the first save may still be being written
            reached = wait_for_step(p, reached + 1)
        assert p.poll() is None, "the loop had ended before the kill"
        p.send_signal(signal.SIGKILL)
        assert p.wait() == -signal.SIGKILL, "the kill did not land on a live loop"
        kills += 1
        last = reached
    p = run_script([LOOP, data, str(run), str(out), "--steps", str(STEPS)], stdout=subprocess.DEVNULL)
    assert p.wait(timeout=300) == 0
    assert_same(reference, torch.load(out, weights_only=False))


def test_sigterm_stops_saved_with_75_and_the_rerun_continues(data, reference, tmp_path):
    run, out = tmp_path / "run", tmp_path / "out.pt"
    p = run_script([LOOP, data, str(run), str(out), "--steps", str(STEPS), "--sleep", "0.1", "--save-every", "100"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    step = wait_for_step(p, 5)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == frugal.EXIT_RESUMABLE
    assert "stopping at the signal SIGTERM" in p.stderr.read()
    saved = sorted(glob.glob(str(run / "ckpt-*.safetensors")))
    assert saved, "no checkpoint was saved on SIGTERM"
    assert int(saved[-1].split("-s")[-1].split(".")[0]) >= step
    p = run_script([LOOP, data, str(run), str(out), "--steps", str(STEPS)], stdout=subprocess.DEVNULL)
    assert p.wait(timeout=300) == 0
    assert_same(reference, torch.load(out, weights_only=False))


def test_a_deadline_ends_the_loop_saved_before_it(data, tmp_path):
    run, out = tmp_path / "run", tmp_path / "out.pt"
    p = run_script([LOOP, data, str(run), str(out), "--steps", "10000", "--sleep", "0.2", "--deadline", "8s"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert p.wait(timeout=120) == frugal.EXIT_RESUMABLE
    err = p.stderr.read()
    assert "stopping at the deadline" in err
    assert glob.glob(str(run / "ckpt-*.safetensors"))
    took = float(err.split("stopped saved ")[1].split(" s after")[0])
    assert 3 < took < 8, f"stopped saved {took:.2f} s after the start: the deadline was 8 s"
    p = run_script([LOOP, data, str(run), str(out), "--steps", "3"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, text=True)
    assert p.wait(timeout=120) == 0 and "resumed" in p.stderr.read()


def test_a_budget_too_small_for_two_checkpoints_refuses_before_writing(tmp_path):
    model = torch.nn.Linear(1000, 1000)  # 4 MB of weights
    opt = torch.optim.AdamW(model.parameters())
    run = tmp_path / "ws" / "run"
    ckpt = frugal.Checkpointer(run, disk_budget="10M")
    with pytest.raises(frugal.Error) as e:
        ckpt.restore(model, opt)
    ckpt.close()
    assert e.value.kind == "budget" and e.value.exit_code == 4
    assert "disk_budget=" in str(e.value)
    assert not run.exists(), "the refused run left its folder behind"


def test_files_load_without_frugal_and_du_knows_them(data, tmp_path):
    from safetensors.torch import load_file
    sys.path.insert(0, HERE)
    from train_loop import Net
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with frugal.Checkpointer(tmp_path / "run") as ckpt:
        assert ckpt.restore(model, opt) is None
        model(torch.randn(2, 3, 24, 24)).sum().backward()
        opt.step()
        ckpt.save(1, model, opt)
        result = ckpt.wait()
    assert result["status"] == "saved"
    tensors = load_file(result["file"])
    weights = {k: v for k, v in tensors.items() if not k.startswith("frugal.")}
    fresh = Net()
    fresh.load_state_dict(weights)  # strict: every name of the module's state_dict()
    for k, v in model.state_dict().items():
        assert torch.equal(v, fresh.state_dict()[k])
    du = subprocess.run([os.path.join(os.environ["FRUGAL_BINARY_DIR"], "bin", "frugal"), "du", str(tmp_path),
                         "--json"], capture_output=True, text=True)
    assert du.returncode == 0, du.stderr
    assert '"checkpoints"' in du.stdout
    clean = subprocess.run([os.path.join(os.environ["FRUGAL_BINARY_DIR"], "bin", "frugal"), "clean", "-n",
                            str(tmp_path)], capture_output=True, text=True)
    assert clean.returncode == 0, clean.stderr  # it reads the Python run's config.json as a run's


def test_the_run_folder_is_claimed_as_the_cli_claims_it(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "model.safetensors").write_bytes(b"x")
    with pytest.raises(frugal.Error, match="did not make") as e:
        frugal.Checkpointer(theirs)
    assert e.value.exit_code == 2
    first = frugal.Checkpointer(tmp_path / "run")
    with pytest.raises(frugal.Error, match="in use") as e:
        frugal.Checkpointer(tmp_path / "run")
    assert e.value.exit_code == 1
    first.close()
    frugal.Checkpointer(tmp_path / "run").close()


def test_signal_handlers_come_back_on_close(tmp_path):
    before = signal.getsignal(signal.SIGINT)
    with frugal.Checkpointer(tmp_path / "run") as ckpt:
        assert signal.getsignal(signal.SIGINT) is not before
        os.kill(os.getpid(), signal.SIGINT)  # the first interrupt asks the loop to stop
        time.sleep(0.05)
        assert ckpt.should_stop()
    assert signal.getsignal(signal.SIGINT) is before


def test_methods_after_close_say_the_checkpointer_is_closed(tmp_path):
    model = torch.nn.Linear(2, 2)
    ckpt = frugal.Checkpointer(tmp_path / "run", signals=False)
    assert ckpt.restore(model) is None
    ckpt.close()
    for call in (lambda: ckpt.save(1, model), lambda: ckpt.restore(model), ckpt.should_stop):
        with pytest.raises(frugal.Error, match="closed") as e:
            call()
        assert e.value.kind == "usage" and e.value.exit_code == 2
        assert "restore() called first" not in str(e.value)
    ckpt.close()  # a second close (a `with` block's end after close()) is no error
