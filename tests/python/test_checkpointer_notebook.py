# frugal.Checkpointer as a notebook uses it (issue 42): a second Checkpointer on the run folder in
# the same process (a cell run twice) is refused saying so (and one in another process names its
# pid); a torch.compile()d model is saved and restored under its own module's names; two Ctrl-C
# within one long step (Python runs its handler once for both) still raise KeyboardInterrupt.
import os
import signal
import subprocess
import sys
import time

import pytest
import safetensors.torch
import torch

import frugal
from conftest import run_script


# ---- a second Checkpointer on one run folder ----------------------------------------------------

def test_a_second_checkpointer_in_this_process_is_refused_saying_so(tmp_path):
    run = tmp_path / "run"
    first = frugal.Checkpointer(run, signals=False)
    with pytest.raises(frugal.Error) as e:
        frugal.Checkpointer(run, signals=False)
    said = str(e.value)
    assert "another frugal.Checkpointer of this process" in said and f"pid {os.getpid()}" in said, said
    assert "close()" in said and "with" in said, said
    assert "another frugal process" not in said, said
    assert e.value.kind == "io" and e.value.exit_code == 1
    # The same folder by another spelling is the same folder.
    with pytest.raises(frugal.Error, match="of this process"):
        frugal.Checkpointer(str(tmp_path / "." / "run") + "/", signals=False)
    first.close()
    frugal.Checkpointer(run, signals=False).close()


def test_a_dropped_first_checkpointer_lets_the_cell_run_again(tmp_path):
    run = tmp_path / "run"
    ckpt = frugal.Checkpointer(run, signals=False)
    ckpt = None  # noqa: F841  (a cell that rebinds its name, the first one unreachable)
    ckpt = frugal.Checkpointer(run, signals=False)
    ckpt.close()
    with frugal.Checkpointer(run, signals=False):
        pass
    frugal.Checkpointer(run, signals=False).close()


def test_a_checkpointer_in_another_process_is_named_by_its_pid(tmp_path):
    run = tmp_path / "run"
    holder = run_script(["-c", "import sys, frugal\n"
                         "c = frugal.Checkpointer(sys.argv[1], signals=False)\n"
                         "print('held', flush=True)\n"
                         "sys.stdin.readline()\n", str(run)],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(frugal.Error) as e:
            frugal.Checkpointer(run, signals=False)
        said = str(e.value)
        assert "in use by another frugal process" in said and f"pid {holder.pid}" in said, said
        assert e.value.exit_code == 1
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0


# ---- torch.compile -------------------------------------------------------------------------------

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))

    def forward(self, x):
        return self.body(x)


def model_names(run):
    [f] = sorted(run.glob("ckpt-*.safetensors"))
    return {k for k in safetensors.torch.load_file(f) if not k.startswith("frugal.")}


def saved(run, model, optimizer, step):
    with frugal.Checkpointer(run, signals=False) as ckpt:
        ckpt.restore(model, optimizer)
        ckpt.save(step, model, optimizer)
        assert ckpt.wait()["status"] == "saved"


def restored(run, model, optimizer):
    with frugal.Checkpointer(run, signals=False) as ckpt:
        return ckpt.restore(model, optimizer)


def test_a_compiled_model_is_saved_under_its_own_names_and_restores_into_either(tmp_path):
    torch.manual_seed(0)
    plain = Net()
    compiled = torch.compile(plain, backend="eager")  # lazy: saving compiles nothing
    assert type(compiled).__name__ == "OptimizedModule" and compiled._orig_mod is plain
    assert all(k.startswith("_orig_mod.") for k in compiled.state_dict())
    opt = torch.optim.Adam(compiled.parameters(), lr=0.01)
    compiled(torch.randn(5, 4)).sum().backward()  # a step through the compiled model (dynamo, eager backend)
    opt.step()
    saved(tmp_path / "a", compiled, opt, 1)
    assert model_names(tmp_path / "a") == set(plain.state_dict()), model_names(tmp_path / "a")

    # Into the plain model (a new session without torch.compile): weights and Adam's state.
    torch.manual_seed(1)
    fresh = Net()
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=0.01)
    assert restored(tmp_path / "a", fresh, fresh_opt) == 1
    for k, v in plain.state_dict().items():
        assert torch.equal(fresh.state_dict()[k], v), k
    assert torch.equal(fresh_opt.state_dict()["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])

    # A plain model's checkpoint into a compiled one.
    saved(tmp_path / "b", fresh, fresh_opt, 2)
    torch.manual_seed(2)
    other = Net()
    other_compiled = torch.compile(other, backend="eager")
    assert restored(tmp_path / "b", other_compiled, torch.optim.Adam(other_compiled.parameters())) == 2
    for k, v in plain.state_dict().items():
        assert torch.equal(other.state_dict()[k], v), k


def test_a_checkpoint_saved_with_orig_mod_names_restores_into_the_plain_model(tmp_path, monkeypatch):
    """What frugal saved from a compiled model before it unwrapped it: every name "_orig_mod.*"."""
    torch.manual_seed(0)
    plain = Net()
    compiled = torch.compile(plain, backend="eager")
    with monkeypatch.context() as m:
        m.setattr(frugal, "_plain_module", lambda model: model, raising=False)  # the frugal before this fix
        saved(tmp_path / "run", compiled, None, 1)
    assert all(k.startswith("_orig_mod.") for k in model_names(tmp_path / "run"))
    fresh = Net()
    assert restored(tmp_path / "run", fresh, None) == 1
    for k, v in plain.state_dict().items():
        assert torch.equal(fresh.state_dict()[k], v), k


# ---- Ctrl-C in a loop that never calls should_stop() --------------------------------------------

LOOP = r"""
import sys, time, torch, frugal
ckpt = frugal.Checkpointer(sys.argv[1])
ckpt.restore(torch.nn.Linear(2, 2))
t = time.monotonic(); sum(range(10**7)); n = int(10**7 * 1.5 / max(time.monotonic() - t, 1e-6))
try:
    for step in range(10**9):  # never asks should_stop(); each step ~1.5 s in C (sum: no signal checks)
        print("step", step, time.time(), flush=True)
        sum(range(n))
except KeyboardInterrupt:
    print("KeyboardInterrupt", time.time(), flush=True)
    sys.exit(3)
"""


def start_loop(tmp_path):
    p = run_script(["-c", LOOP, str(tmp_path / "run")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().startswith("step 0"), p.communicate()
    return p


def ended(p, within):
    try:
        out, err = p.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"the loop went on {within} s after the second SIGINT; stderr:\n{err}")
    return out, err


def test_two_sigints_within_one_step_raise_keyboard_interrupt(tmp_path):
    p = start_loop(tmp_path)
    assert p.stdout.readline().startswith("step 1")  # at the start of a step of ~1.5 s
    time.sleep(0.3)  # well into it: in sum(), where Python runs no signal handler
    p.send_signal(signal.SIGINT)
    time.sleep(0.05)
    assert p.poll() is None, "the first SIGINT ended the loop"
    p.send_signal(signal.SIGINT)
    second = time.time()
    out, err = ended(p, 8)
    assert p.returncode == 3, (p.returncode, out, err)
    when = float(out.split("KeyboardInterrupt")[1].split()[0])
    assert when - second < 3, f"KeyboardInterrupt {when - second:.1f} s after the second SIGINT"


def test_the_first_sigint_asks_the_second_one_later_interrupts(tmp_path):
    p = start_loop(tmp_path)
    p.send_signal(signal.SIGINT)
    for line in p.stdout:  # the first asks to stop: the loop goes on (it never asks should_stop())
        if line.startswith("step 3"):
            break
    assert p.poll() is None, "the first SIGINT ended the loop"
    p.send_signal(signal.SIGINT)
    second = time.time()
    out, err = ended(p, 8)
    assert "the loop stops saved at its next should_stop()" in err, err
    assert p.returncode == 3, (p.returncode, out, err)
    when = float(out.split("KeyboardInterrupt")[1].split()[0])
    assert when - second < 3, f"KeyboardInterrupt {when - second:.1f} s after the second SIGINT"
