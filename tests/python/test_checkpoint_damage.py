# frugal.Checkpointer.restore() on a checkpoint whose Python state is damaged or crafted: the checksum
# covers the tensors, not the JSON beside them in the safetensors header ("python.state", "loader"),
# so restore() must refuse such a file as frugal.Error (kind "invalid") naming it, with the
# optimizer, scheduler, scaler and random states as they were, never a raw KeyError/RecursionError.
#
# The damage is done to real checkpoint files: the header (8-byte little-endian length, JSON) is
# rewritten with the metadata changed and the tensor payload left as it was, so the file still
# verifies and the damage reaches restore()'s own decoding.
import json
import os
import random
import struct
import sys

import numpy as np
import pytest
import torch

import frugal
from conftest import make_index_zip

SEED = 30  # the fuzz test's mutations are a function of this
MUTATIONS = 300


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_index_zip(tmp_path_factory.mktemp("data") / "d.zip", 40)


@pytest.fixture(autouse=True)
def global_random_states_kept():
    """restore() sets the process's random states; the tests after these see theirs unchanged."""
    saved = torch.get_rng_state(), random.getstate(), np.random.get_state()
    yield
    torch.set_rng_state(saved[0])
    random.setstate(saved[1])
    np.random.set_state(saved[2])


def training():
    """A fresh model, optimizer (with no state yet), scheduler and scaler."""
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, opt, torch.optim.lr_scheduler.StepLR(opt, step_size=2), torch.amp.GradScaler("cpu")


def loader_of(data):
    return frugal.Loader(data, batch_size=8, image_size=16, workers=1)


def save_one(run, data):
    """A checkpoint at step 2 of everything restore() brings back; returns its file."""
    model, opt, sched, scaler = training()
    loader = loader_of(data)
    with frugal.Checkpointer(run, signals=False) as ckpt:
        assert ckpt.restore(model, opt, sched, scaler, loader) is None
        batches = iter(loader)
        for _ in range(2):
            next(batches)
            scaler.scale(model(torch.randn(5, 4)).sum()).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
        ckpt.save(2, model, opt, sched, scaler, loader)
        result = ckpt.wait()
    assert result["status"] == "saved"
    return result["file"]


def read_header(file):
    with open(file, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_metadata(file, header, payload, changes):
    """The checkpoint with metadata strings replaced, its tensors and their checksum as they were."""
    header = dict(header, __metadata__=dict(header["__metadata__"], **changes))
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the payload starts 8-byte aligned, as frugal writes it
    with open(file, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + payload)


@pytest.fixture
def saved(data, tmp_path):
    run = tmp_path / "run"
    file = save_one(run, data)
    header, payload = read_header(file)
    return run, file, header, payload


def assert_invalid_naming(e, file):
    assert e.kind == "invalid" and e.exit_code == 3, (e.kind, e.exit_code, str(e))
    assert os.path.basename(file) in str(e) and "remove that file" in str(e), str(e)
    assert e.__cause__ is not None, "the decoding error is not chained"


def test_a_damaged_python_state_is_an_invalid_checkpoint_naming_the_file(saved, data):
    run, file, header, payload = saved
    state = json.loads(header["__metadata__"]["python.state"])
    for damage in ([], "not json {", dict(state, optimizer={"state": {"0": 1}}),
                   dict(state, optimizer=dict(state["optimizer"], param_groups=7)),
                   dict(state, scaler={"__dict__": [["scale", "big"]]}),
                   dict(state, rng=dict(state["rng"], torch={"__tensor__": "no.such.tensor"}))):
        write_metadata(file, header, payload,
                       {"python.state": damage if isinstance(damage, str) else json.dumps(damage)})
        model, opt, sched, scaler = training()
        with frugal.Checkpointer(run, signals=False) as ckpt:
            with pytest.raises(frugal.Error) as e:
                ckpt.restore(model, opt, sched, scaler, loader_of(data))
        assert_invalid_naming(e.value, file)


def test_a_bad_random_state_leaves_the_model_and_optimizer_as_they_were(saved, data):
    run, file, header, payload = saved
    state = json.loads(header["__metadata__"]["python.state"])
    state["rng"]["python"]["__tuple__"][0] = 99  # no version of Python's random state: found last
    write_metadata(file, header, payload, {"python.state": json.dumps(state)})
    model, opt, sched, scaler = training()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    lr, rng = sched.get_last_lr(), torch.get_rng_state()
    with frugal.Checkpointer(run, signals=False) as ckpt:
        with pytest.raises(frugal.Error) as e:
            ckpt.restore(model, opt, sched, scaler, loader_of(data))
    assert_invalid_naming(e.value, file)
    assert not opt.state, "the optimizer was loaded before the random states failed"
    assert sched.get_last_lr() == lr and torch.equal(torch.get_rng_state(), rng)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_a_state_nested_past_the_depth_limit_is_invalid_not_a_recursion_error(saved, data):
    run, file, header, payload = saved
    state = json.loads(header["__metadata__"]["python.state"])

    def nested(key, opening, closing, levels):
        return json.dumps(dict(state, **{key: "@"})).replace('"@"', opening * levels + "0" + closing * levels)

    deep = [(nested("scheduler", '{"__tuple__": [', "]}", 150), "nesting deeper than 100 levels"),
            (nested("scheduler", "[", "]", 10000), "JSON nested deeper than 400 levels"),
            (nested("rng", '{"a": ', "}", 10000), "JSON nested deeper than 400 levels"),
            (nested("optimizer", "[", "]", 300000), "JSON nested deeper than 400 levels")]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10**6)  # as some training scripts do: json's C parser would overflow the stack
    try:
        for text, said in deep:
            write_metadata(file, header, payload, {"python.state": text})
            model, opt, sched, scaler = training()
            with frugal.Checkpointer(run, signals=False) as ckpt:
                with pytest.raises(frugal.Error) as e:
                    ckpt.restore(model, opt, sched, scaler, loader_of(data))
            assert_invalid_naming(e.value, file)
            assert said in str(e.value), str(e.value)
    finally:
        sys.setrecursionlimit(limit)


def numpy_key(state):
    """The __ndarray__ of NumPy's random state (its 624-word key, stored as an int64 tensor)."""
    return state["rng"]["numpy"]["__tuple__"][1]


def test_an_array_of_a_dtype_no_state_holds_is_invalid_before_it_is_made(saved, data):
    """Issue 47: "dtype": "U2000000" made 624 strings of 8 MB (6.5 GB over 27 s) before set_state
    refused them; "U50000000" let MemoryError escape. Only numeric and bool dtypes are a state's, and
    an array is made only from a tensor of its own dtype, so nothing is allocated for such a state."""
    import resource
    run, file, header, payload = saved
    state = json.loads(header["__metadata__"]["python.state"])
    assert numpy_key(state)["dtype"] == "uint32", numpy_key(state)
    for dtype in ("U2000000", "U50000000", "S100000000", "O", "V8", "<U8", "[('a', '<i8')]", "datetime64[s]",
                  "int32", "float64", 7, None):
        damaged = json.loads(json.dumps(state))
        numpy_key(damaged)["dtype"] = dtype
        write_metadata(file, header, payload, {"python.state": json.dumps(damaged)})
        model, opt, sched, scaler = training()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
        with frugal.Checkpointer(run, signals=False) as ckpt:
            with pytest.raises(frugal.Error) as e:
                ckpt.restore(model, opt, sched, scaler, loader_of(data))
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
        assert_invalid_naming(e.value, file)
        assert "dtype" in str(e.value) or "tensor" in str(e.value), str(e.value)
        assert grown < 100 * 1024, f"dtype {dtype!r}: the peak memory grew {grown // 1024} MiB before the refusal"
        assert not opt.state, "the optimizer was loaded from a refused state"


def test_one_tensor_made_into_many_arrays_is_invalid(saved, data):
    """Each array is made from a tensor of its own; a python.state naming one tensor again and again
    (each a copy) could otherwise ask for its size times the references."""
    run, file, header, payload = saved
    state = json.loads(header["__metadata__"]["python.state"])
    state["scheduler"] = [numpy_key(state)] * 1000
    write_metadata(file, header, payload, {"python.state": json.dumps(state)})
    model, opt, sched, scaler = training()
    with frugal.Checkpointer(run, signals=False) as ckpt:
        with pytest.raises(frugal.Error) as e:
            ckpt.restore(model, opt, sched, scaler, loader_of(data))
    assert_invalid_naming(e.value, file)
    assert "named once" in str(e.value), str(e.value)


def test_running_out_of_memory_while_decoding_is_invalid_naming_the_file(saved, data, monkeypatch):
    """Whatever decoding a state raises, MemoryError too, is the documented error: the file named,
    remove it to resume from the one before (a MemoryError escaped restore() before)."""
    run, file, header, payload = saved

    def no_memory(text):
        raise MemoryError()

    monkeypatch.setattr(frugal, "_loads_bounded", no_memory)
    model, opt, sched, scaler = training()
    with frugal.Checkpointer(run, signals=False) as ckpt:
        with pytest.raises(frugal.Error) as e:
            ckpt.restore(model, opt, sched, scaler, loader_of(data))
    assert_invalid_naming(e.value, file)
    assert "MemoryError" in str(e.value), str(e.value)


def test_a_damaged_loader_position_is_invalid(saved, data):
    run, file, header, payload = saved
    for loader_state in ({"position": 3}, {"epoch": -1, "position": 0}):
        write_metadata(file, header, payload, {"loader": json.dumps(loader_state)})
        model, opt, sched, scaler = training()
        with frugal.Checkpointer(run, signals=False) as ckpt:
            with pytest.raises(frugal.Error) as e:
                ckpt.restore(model, opt, sched, scaler, loader_of(data))
        assert_invalid_naming(e.value, file)


def test_the_undamaged_checkpoint_restores(saved, data):
    run, file, header, payload = saved
    write_metadata(file, header, payload, {})  # the rewrite alone changes nothing
    model, opt, sched, scaler = training()
    loader = loader_of(data)
    with frugal.Checkpointer(run, signals=False) as ckpt:
        assert ckpt.restore(model, opt, sched, scaler, loader) == 2
    assert opt.state and sched.last_epoch == 2 and loader.state_dict()["position"] == 16


# ---- Fuzz: random mutations of a valid python.state and loader position ----------------------------

def random_value(rng, names, depth=0):
    """A JSON value, often one shaped like what _Flat.encode writes (tensor references, tuples, dicts)."""
    kind = rng.randrange(14 if depth < 3 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, 1, -1, 3, 624, 625, 2**32, 2**64, -2**70, 10**400])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308, float("nan"), float("inf")])
    if kind == 4:
        return rng.choice(["", "x", "int64", "uint8", "object", "__tensor__", "MT19937"])
    if kind == 5:
        return rng.choice(names)
    if kind == 6:
        return {"__tensor__": rng.choice(names + ["nope", 3])}
    if kind == 7:
        return {"__ndarray__": rng.choice(names), "dtype": rng.choice(["uint32", "float64", "bogus", "O", 5])}
    if kind == 8:
        return [random_value(rng, names, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 9:
        return {"__tuple__": random_value(rng, names, depth + 1)}
    if kind == 10:
        return {"__dict__": [[random_value(rng, names, depth + 1), random_value(rng, names, depth + 1)]
                             for _ in range(rng.randrange(3))]}
    if kind == 11:
        return {"__dict__": random_value(rng, names, depth + 1)}
    if kind == 12:
        key = rng.choice(["state", "param_groups", "torch", "python", "epoch", "k"])
        return {key: random_value(rng, names, depth + 1)}
    return {"__tuple__": [random_value(rng, names, depth + 1) for _ in range(rng.randrange(4))]}


def walk(rng, node):
    """A random container in `node` and a key or index of it (deeper ones as likely as shallow)."""
    parent, key = None, None
    while isinstance(node, (dict, list)) and node and (parent is None or rng.random() < 0.8):
        parent = node
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        node = node[key]
    return parent, key


def mutate(rng, text, names):
    """One mutation of the JSON `text`: a value replaced or deleted, a type changed, deep nesting, a
    truncation. Returns the new text and what was done (for the failure message)."""
    how = rng.randrange(8)
    if how == 0:
        cut = rng.randrange(len(text))
        return text[:cut], f"truncated at {cut}"
    if how == 1:
        return json.dumps(random_value(rng, names)), "replaced whole"
    state = json.loads(text)
    parent, key = walk(rng, state)
    if parent is None:
        return "{}", "emptied"
    if how == 2:
        del parent[key]
        return json.dumps(state), f"deleted {key!r}"
    if how == 3:  # nesting past any limit: the decoder's and json's own
        levels = rng.choice([101, 150, 1000, 10000])
        opening, closing = rng.choice([("[", "]"), ('{"__tuple__": [', "]}"), ('{"__dict__": [[1, ', "]]}")])
        parent[key] = "@deep@"
        deep = opening * levels + "0" + closing * levels
        return json.dumps(state).replace('"@deep@"', deep), f"{key!r} nested {levels} deep"
    if how == 4:  # the same value as another type
        value = parent[key]
        parent[key] = rng.choice([[value], {"v": value}, str(value)[:50], {"__tuple__": value}])
        return json.dumps(state), f"{key!r} retyped"
    parent[key] = random_value(rng, names)
    return json.dumps(state), f"{key!r} replaced"


def plain(x):
    """x with its tensors and arrays as lists, for repr() to show whole."""
    if isinstance(x, (torch.Tensor, np.ndarray)):
        return (str(x.dtype), x.tolist())
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(plain(v) for v in x)
    return x


def everything(model, opt, sched, scaler, loader):
    """What restore() may change, as text."""
    return repr(plain((model.state_dict(), opt.state_dict(), sched.state_dict(), scaler.state_dict(),
                       loader.state_dict(), torch.get_rng_state(), random.getstate(), np.random.get_state())))


def test_random_mutations_of_the_state_restore_or_are_invalid(saved, data):
    run, file, header, payload = saved
    good_state = header["__metadata__"]["python.state"]
    good_loader = header["__metadata__"]["loader"]
    names = sorted(k[len("frugal."):] for k in header if k.startswith("frugal."))  # the state tensors
    assert "rng.torch" in names, names
    rng = random.Random(SEED)
    outcomes = {"restored": 0, "invalid": 0, "none": 0}
    model, opt, sched, scaler = training()
    loader = loader_of(data)
    with frugal.Checkpointer(run, signals=False) as ckpt:
        for i in range(MUTATIONS):
            changes = {"python.state": good_state, "loader": good_loader}
            target = "loader" if rng.random() < 0.15 else "python.state"
            changes[target], what = mutate(rng, changes[target], names)
            write_metadata(file, header, payload, changes)
            before = everything(model, opt, sched, scaler, loader)
            try:
                step = ckpt.restore(model, opt, sched, scaler, loader)
            except frugal.Error as e:
                assert e.kind == "invalid", f"mutation {i} ({target}: {what}): {e.kind}: {e}"
                assert_invalid_naming(e, file)
                assert everything(model, opt, sched, scaler, loader) == before, \
                    f"mutation {i} ({target}: {what}) was refused after a part of it was applied"
                outcomes["invalid"] += 1
            except Exception as e:  # noqa: BLE001 -- what the test is for
                pytest.fail(f"mutation {i} ({target}: {what}) raised {type(e).__name__}: {e}")
            else:  # None: the core skipped the file (a loader position it refuses itself)
                outcomes["restored" if step == 2 else "none"] += 1
    print(outcomes)
    assert outcomes["invalid"] >= MUTATIONS // 3 and outcomes["restored"] >= 10, outcomes
