"""frugal in your own training loop: its fast loader and its safe checkpoints.

    import frugal
    loader = frugal.Loader("photos.zip", batch_size=64, image_size=224, device="cuda")
    ckpt = frugal.Checkpointer("runs/mine", disk_budget="4G", keep_last=2, deadline="7h40m")
    step = ckpt.restore(model, optimizer, loader=loader) or 0
    for images, labels in loader: ...

The work is done by frugal's C++ core (the library the `frugal` command runs), bound thinly here;
docs/python.md is the guide. Errors are frugal.Error (a RuntimeError) with .kind and .exit_code.
"""

import json
import os
import random
import re
import signal
import sys
import threading
import weakref

import torch  # first: frugal._core uses the LibTorch that this torch has loaded

from . import _build_info

if torch.__version__ != _build_info.torch_version:
    raise ImportError(
        f"frugal was built against torch {_build_info.torch_version}, but this Python has torch "
        f"{torch.__version__}; rebuild it against this one: pip install --no-build-isolation "
        f"--force-reinstall {_build_info.source_dir} (or `make python` in that checkout)")

# The parquet reader is a plugin beside the module in an installed package, or in lib/ of a wheel
# (beside the programs' bin/); the build tree's module knows where its own is.
for _plugin in (os.path.join(os.path.dirname(__file__), "lib", "libfrugal_arrow_parquet.so"),
                os.path.join(os.path.dirname(__file__), "libfrugal_arrow_parquet.so")):
    if os.path.exists(_plugin):
        os.environ.setdefault("FRUGAL_PARQUET_PLUGIN", _plugin)
        break

from . import _core  # noqa: E402

__version__ = _build_info.frugal_version
Error = _core.Error
#: The exit code of a training stopped resumable (deadline, signal), as the CLI's.
EXIT_RESUMABLE = 75

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

__all__ = ["Loader", "Checkpointer", "split", "join", "verify", "report", "Report", "Error", "EXIT_RESUMABLE"]

# The CLI's exit code of each kind of failure (CLI.md; include/frugal/util/error.h).
_EXIT_CODES = {"usage": 2, "invalid": 3, "unsupported": 3, "budget": 4, "io": 1, "interrupted": 75}


def _error(kind, message):
    """frugal.Error as the core raises it, with .kind and .exit_code."""
    e = Error(message)
    e.kind, e.exit_code = kind, _EXIT_CODES[kind]
    return e


def _text(v):
    return "" if v is None else os.fspath(v)


def _size_text(v, name):
    """A size keyword (bytes as an int, or "512M") as the core parses it; None stays None."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return str(v)
    raise _error("usage", f"{name}=: expected a number of bytes or a size such as \"512M\", found {v!r}; "
                 f"give e.g. {name}=\"1G\"")


def _patterns(v, name):
    """A keyword of files (exclude=): one path or glob, or a list of them, as the CLI's repeated flag."""
    if v is None:
        return []
    if isinstance(v, (str, bytes, os.PathLike)):
        v = [v]
    try:
        items = list(v)
    except TypeError:
        items = None
    if items is None or not all(isinstance(p, (str, os.PathLike)) for p in items):
        raise _error("usage", f"{name}=: expected a path inside the data or a glob, or a list of them, found {v!r}; "
                     f"give e.g. {name}=[\"train/cat/bad.jpg\", \"*.txt\"]")
    return [os.fspath(p) for p in items]


# What the core notes when a loader opens its data (its size and classes, "validating on a stable
# 5%") is said once per data and line in a process: a notebook that makes loaders in a loop sees it
# once, not on every pass. The core keeps those lines for us (Loader.notes: caught on the thread
# that opened the data, so progress bars and other threads' output go to stderr as they come).
_notes_lock = threading.Lock()
_notes_said = set()


def _say_new_lines(data, lines):
    with _notes_lock:
        for line in lines:
            if line and (data, line) not in _notes_said:
                _notes_said.add((data, line))
                if sys.stderr is not None:
                    print(line, file=sys.stderr)


class Loader:
    """Batches of DATA decoded and augmented by frugal's C++ threads.

    DATA is anything `frugal train` reads: a zip, a split set (its manifest or first part), a folder,
    a tar, WebDataset shards, parquet. Iterating gives (images, labels): images uint8 N×C×H×W on
    `device` (float, ImageNet mean/std, when normalize=True), labels int64 N. Each pass of `for` is
    one epoch; len(loader) is its batch count.

    The order is a function of (seed, epoch) and each sample's augmentation of (seed, epoch, sample),
    so batches do not depend on `workers`, and state_dict()/load_state_dict() resume mid-epoch
    exactly. With `subset="val"` it reads the validation samples: a stable `val_split` of DATA (the
    same on every run; None: 5%, said; 0: none, so the "val" subset is empty), DATA's val/ folder
    when its top level is train/ val/ test/, or `val`.

    Under torchrun (or with rank/world_size) each rank reads its own part of every global batch of
    batch_size × world_size samples, as `frugal train` shares data.

    This is one iterator with its own C++ threads, not a torch.utils.data.Dataset: do not wrap it in
    a DataLoader. Its threads do not survive fork() (torchcodec#766, decord#294), so it refuses to
    run in a forked process such as a DataLoader worker; use it in the main process in place of the
    DataLoader. While it waits for a batch the GIL is released.

    An image or array file larger than `max_file_bytes` (bytes, or a size such as "512M"; None:
    256 MiB) is skipped when DATA is opened and counted in the notes, as `frugal train
    --max-file-bytes` does: nothing that large is read into memory.

    The label keywords are `frugal train`'s options (labels=, label_columns=, images_dir=, ...).
    val_labels= (with val_label_columns=, val_images_dir=) is the validation data's own label file
    (Tiny-ImageNet's val/val_annotations.txt, headerless: labels_header="no"), for validation data of
    its own (val= or DATA's val/ folder, not a split): labels= then labels the training data alone,
    and the validation labels must be the training classes. exclude= is a file or glob inside the
    data, or a list of them, never read (counted as "excluded" in `skipped`; '*' within a folder,
    '**' across them, a name without '/' in any folder). label_kind= is CIFAR-100's "fine" (default,
    100 classes) or "coarse" (20 superclasses). name_encoding= ("cp437", "gbk", ...) decodes entry names
    that are not UTF-8 (class folders included); cache_decompressed=True decompresses a compressed tar
    once into the cache folder ($FRUGAL_CACHE_DIR, else ~/.cache/frugal) and reads it from there.
    """

    def __init__(self, data, batch_size=64, image_size=224, train=True, seed=0, workers=2, val_split=None,
                 subset="train", device="cpu", rank=None, world_size=None, *, normalize=False, val=None,
                 shuffle=None, drop_last=False, labels=None, label_pattern=None, label_columns=None,
                 images_dir=None, class_names=None, channels=0, data_root=None, max_bad_fraction=0.01,
                 prefetch=4, max_file_bytes=None, label_separator=None, labels_header="auto",
                 labels_are_classes=False, val_labels=None, val_label_columns=None, val_images_dir=None,
                 exclude=(), label_kind=None, name_encoding=None, cache_decompressed=False):
        info = torch.utils.data.get_worker_info()
        if info is not None:
            raise _error("usage", "frugal.Loader: expected the main process, found DataLoader worker "
                         f"{info.id}; a frugal.Loader is one iterator with its own threads: iterate it "
                         "in place of the DataLoader, not inside one")
        self.device = torch.device(device)
        self.normalize = normalize
        self._core = _core.Loader(
            data=_text(data), val=_text(val), subset=subset,
            val_split=None if val_split is None else float(val_split),
            data_root=_text(data_root), labels=_text(labels), label_pattern=_text(label_pattern),
            label_columns=_text(label_columns), images_dir=_text(images_dir), class_names=_text(class_names),
            channels=channels, max_bad_fraction=max_bad_fraction, batch_size=batch_size, image_size=image_size,
            train=train, seed=seed, workers=workers, shuffle=train if shuffle is None else shuffle,
            drop_last=drop_last, pin_memory=self.device.type == "cuda", prefetch=prefetch,
            rank=-1 if rank is None else rank, world=-1 if world_size is None else world_size,
            max_file_bytes=_size_text(max_file_bytes, "max_file_bytes"),
            label_separator=_text(label_separator), labels_header=_text(labels_header),
            labels_are_classes=bool(labels_are_classes), val_labels=_text(val_labels),
            val_label_columns=_text(val_label_columns), val_images_dir=_text(val_images_dir),
            exclude=_patterns(exclude, "exclude"), label_kind=_text(label_kind),
            name_encoding=_text(name_encoding), cache_decompressed=bool(cache_decompressed))
        _say_new_lines(_text(data), self._core.notes)
        self.batch_size = batch_size
        self.image_size = image_size
        self.train = train
        self.seed = seed
        self._epoch = 0
        self._position = 0
        self._in_flight = None  # the previous batch's host tensors and its copy's event (CUDA)
        # The thread whose passes are under way and how many (one thread may hold two iterators);
        # another thread's pass is refused: two threads waiting on one loader's batches hung.
        self._iterating = threading.Lock()
        self._owner, self._passes = None, 0

    @property
    def classes(self):
        """Class names; label i is classes[i]. Multi-label data: the tag names."""
        return list(self._core.classes)

    @property
    def multi_label(self):
        """True for data of tags (a label column of tag lists with label_separator=, or one 0/1 column per
        tag): each batch's labels are then (B, len(classes)) float32 0/1 targets, for
        torch.nn.BCEWithLogitsLoss; else (B,) int64 class indices."""
        return self._core.multi_label

    @property
    def channels(self):
        return self._core.channels

    @property
    def rank(self):
        return self._core.rank

    @property
    def world_size(self):
        return self._core.world

    @property
    def num_samples(self):
        """Samples in this subset (all ranks together)."""
        return self._core.size

    @property
    def skipped(self):
        """The files opening this subset's data left out, by reason ({"excluded": 1, "junk": 2, ...}),
        as the notes count them: DATA's, or for subset="val" with validation data of its own (val=,
        DATA's val/ folder) that data's. Undecodable images the loader meets later are not in it."""
        return dict(self._core.skipped)

    @property
    def epoch(self):
        return self._epoch

    def __len__(self):
        return self._core.batches_per_epoch

    def state_dict(self):
        """Where the next batch comes from: the epoch and the position in its order."""
        return {"epoch": self._epoch, "position": self._position, "seed": self.seed,
                "global_batch": self.batch_size * self.world_size}

    def load_state_dict(self, state):
        self._epoch = int(state["epoch"])
        self._position = int(state["position"])

    def set_epoch(self, epoch):
        """Starts the next pass at the beginning of `epoch`."""
        self._epoch, self._position = int(epoch), 0

    def __iter__(self):
        self._begin_pass()
        try:
            yield from self._pass()
        finally:
            self._end_pass()

    def _begin_pass(self):
        me = threading.current_thread()
        with self._iterating:
            if self._owner is not None and self._owner is not me:
                raise _error("usage", f"frugal.Loader: expected one thread iterating it at a time, found thread "
                             f"{me.name!r} starting a pass while thread {self._owner.name!r} is in one; iterate "
                             "it from one thread (let the other's loop end, or close() its iterator, first), or "
                             "give each thread a Loader of its own")
            self._owner, self._passes = me, self._passes + 1

    def _end_pass(self):
        with self._iterating:
            self._passes -= 1
            if self._passes == 0:
                self._owner = None

    def _pass(self):
        epoch = self._epoch
        self._core.start(epoch, self._position)
        batch = self._next()
        if batch is None and self._position > 0:  # left at the end of an epoch: the next one
            epoch, self._epoch, self._position = epoch + 1, epoch + 1, 0
            self._core.start(epoch, 0)
            batch = self._next()
        while batch is not None:
            images, labels, _, position = batch
            self._position = position
            yield self._deliver(images, labels)
            batch = self._next()
        self._epoch, self._position = epoch + 1, 0

    def _next(self):
        """The next batch, on the thread whose pass it is (an iterator handed to another thread
        while its pass is under way is refused as a second thread's pass is)."""
        me = threading.current_thread()
        with self._iterating:
            if self._owner is not me:
                raise _error("usage", f"frugal.Loader: expected one thread iterating it at a time, found thread "
                             f"{me.name!r} continuing a pass of thread {self._owner.name!r}; iterate it from one "
                             "thread, or give each thread a Loader of its own")
        return self._core.next()

    def _deliver(self, images, labels):
        if self.device.type == "cuda":
            # Pinned host batches copied without blocking; a host batch is handed back to the
            # loader (which reuses its memory) only once its copy has finished.
            previous = self._in_flight
            images_d = images.to(self.device, non_blocking=True)
            labels_d = labels.to(self.device, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            self._in_flight = (images, labels, event)
            if previous is not None:
                previous[2].synchronize()
            images, labels = images_d, labels_d
        elif self.device.type != "cpu":
            images, labels = images.to(self.device), labels.to(self.device)
        if self.normalize:
            images = _core.normalize(images, list(IMAGENET_MEAN), list(IMAGENET_STD))
        return images, labels


# ---- Checkpoints: what a Python loop's state is, as tensors and JSON --------------------------------

#: How deep saved Python state may nest: far beyond what an optimizer, scheduler or random state
#: holds, and well within Python's recursion limit, so that a crafted python.state is refused as
#: invalid rather than by a RecursionError. Its JSON nests deeper (a dict is 3 levels, a tuple 2).
_MAX_DEPTH = 100
_MAX_JSON_DEPTH = 4 * _MAX_DEPTH
# A JSON string (skipped whole, brackets in it and all; an unterminated one to the end, so that
# each character is read once) or a bracket.
_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


class _Flat:
    """Python state as JSON with its tensors named apart (safetensors holds the tensors)."""

    def __init__(self):
        self.tensors = {}

    def encode(self, obj, path, depth=0):
        if depth > _MAX_DEPTH:
            raise _error("usage", f"frugal.Checkpointer: {path}: expected state nested at most {_MAX_DEPTH} "
                         "levels deep, found deeper; save it yourself or leave it out")
        if isinstance(obj, torch.Tensor):
            self.tensors[path] = obj.detach()
            return {"__tensor__": path}
        if type(obj).__module__ == "numpy":
            import numpy as np
            if isinstance(obj, np.ndarray):
                dtype = str(obj.dtype)
                t = torch.from_numpy(obj.astype(np.int64) if obj.dtype == np.uint32 else np.array(obj))
                self.tensors[path] = t
                return {"__ndarray__": path, "dtype": dtype}
            return self.encode(obj.item(), path, depth)
        if isinstance(obj, dict):
            return {"__dict__": [[self.encode(k, f"{path}.k{i}", depth + 1), self.encode(v, f"{path}.{k}", depth + 1)]
                                 for i, (k, v) in enumerate(obj.items())]}
        if isinstance(obj, tuple):
            return {"__tuple__": [self.encode(v, f"{path}.{i}", depth + 1) for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(v, f"{path}.{i}", depth + 1) for i, v in enumerate(obj)]
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        raise _error("usage", f"frugal.Checkpointer: {path}: expected tensors, numbers, strings, lists and dicts, "
                     f"found {type(obj).__name__}; save it yourself or leave it out")


def _expect(holds, what):
    if not holds:
        raise ValueError(f"expected {what}")


def _loads_bounded(text):
    """json.loads(text), refused before it is parsed when nested past _MAX_JSON_DEPTH: json's parser
    recurses in C, so under a raised sys.setrecursionlimit deep nesting overflows the stack (a crash)."""
    depth = 0
    for token in _JSON_NESTING.finditer(text):
        if token.group() in ("[", "{"):
            depth += 1
            if depth > _MAX_JSON_DEPTH:
                raise ValueError(f"JSON nested deeper than {_MAX_JSON_DEPTH} levels")
        elif token.group() in ("]", "}"):
            depth -= 1
    return json.loads(text)


def _decode(obj, tensors, depth=0):
    """_Flat.encode's JSON back to Python values. Raises ValueError (or the like) on JSON it did not write."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"nesting deeper than {_MAX_DEPTH} levels")
    if isinstance(obj, list):
        return [_decode(v, tensors, depth + 1) for v in obj]
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return tensors[obj["__tensor__"]]
        if "__ndarray__" in obj:
            return tensors.ndarray(obj["__ndarray__"], obj.get("dtype"))
        if "__tuple__" in obj:
            _expect(isinstance(obj["__tuple__"], list), "a list in __tuple__")
            return tuple(_decode(v, tensors, depth + 1) for v in obj["__tuple__"])
        if "__dict__" in obj:
            _expect(isinstance(obj["__dict__"], list), "a list of [key, value] in __dict__")
            return {_decode(k, tensors, depth + 1): _decode(v, tensors, depth + 1) for k, v in obj["__dict__"]}
    return obj


#: The dtypes of the NumPy arrays a state holds (a RandomState's key, a scheduler's numbers): each
#: stored as the tensor of its own dtype, uint32 as int64 (_Flat.encode). Unicode, object, void and
#: structured dtypes are no state's: "U50000000" would make each element 200 MB before it is checked.
_NDARRAY_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                   "float16", "float32", "float64", "complex64", "complex128")


class _Tensors:
    """A checkpoint's tensors by name, for _decode: each NumPy array is made from one tensor of its own
    dtype (never more bytes than the file holds), and each tensor becomes at most one array, so that a
    python.state naming one tensor a million times is refused, not a million copies."""

    def __init__(self, tensors):
        self._tensors = tensors
        self._arrays = set()

    def __getitem__(self, name):
        return self._tensors[name]

    def ndarray(self, name, dtype):
        import numpy as np
        _expect(isinstance(dtype, str) and dtype in _NDARRAY_DTYPES, f"a NumPy dtype of {', '.join(_NDARRAY_DTYPES)}")
        _expect(isinstance(name, str) and name not in self._arrays, "each array's tensor named once")
        t = self._tensors[name]
        stored = "int64" if dtype == "uint32" else dtype
        _expect(str(t.dtype) == f"torch.{stored}", f"the tensor {name} of {stored} for an array of {dtype}")
        self._arrays.add(name)
        a = t.numpy()
        if dtype == "uint32":
            _expect(a.size == 0 or (a.min() >= 0 and a.max() < 2**32), f"uint32 values in {name}")
        return a.astype(dtype)


def _param_names(optimizer, model):
    """Names of the optimizer's parameters in its state_dict() order (the model's where it has them)."""
    by_id = {id(p): n for n, p in model.named_parameters()} if model is not None else {}
    names = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            names.append(by_id.get(id(p), f"param{len(names)}"))
    return names


def _encode_optimizer(optimizer, model, flat):
    sd = optimizer.state_dict()
    names = _param_names(optimizer, model)
    state = [[i, flat.encode(s, f"optim.{names[i] if i < len(names) else i}")] for i, s in sd["state"].items()]
    return {"state": state, "param_groups": flat.encode(sd["param_groups"], "optim.groups")}


def _decode_python_state(raw):
    py_state = _loads_bounded(raw.decode())
    _expect(isinstance(py_state, dict), "a dict")
    return py_state


def _decode_optimizer(enc, tensors, optimizer):
    """The optimizer's state_dict(), its groups checked against `optimizer`'s as load_state_dict() will."""
    _expect(isinstance(enc, dict) and isinstance(enc["state"], list), "{\"state\": [[index, state], ...], ...}")
    state = {int(i): _decode(s, tensors) for i, s in enc["state"]}
    groups = _decode(enc["param_groups"], tensors)
    _expect(all(isinstance(s, dict) for s in state.values()), "a dict of each parameter's state")
    _expect(isinstance(groups, list) and all(isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups),
            "param_groups: a list of dicts with \"params\"")
    sizes = [len(g["params"]) for g in optimizer.param_groups]
    _expect([len(g["params"]) for g in groups] == sizes, f"parameter groups of {sizes} parameters, as the optimizer's")
    return {"state": state, "param_groups": groups}


def _decode_dict(enc, tensors):
    """A scheduler's or scaler's state_dict()."""
    sd = _decode(enc, tensors)
    _expect(isinstance(sd, dict) and all(isinstance(k, str) for k in sd), "a dict with string keys")
    return sd


def _decode_scaler(enc, tensors, scaler):
    """The scaler's state_dict(), checked for the numbers a GradScaler's load_state_dict() reads."""
    sd = _decode_dict(enc, tensors)
    if isinstance(scaler, torch.amp.GradScaler) and scaler.is_enabled():  # a disabled one loads nothing
        for k in ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"):
            _expect(isinstance(sd.get(k), (int, float)) and not isinstance(sd[k], bool), f"a number in {k!r}")
    return sd


def _decode_loader(text):
    """The loader's position (Loader.state_dict()), or None where the checkpoint holds none."""
    sd = _loads_bounded(text)
    if sd == {}:  # saved without a loader
        return None
    _expect(isinstance(sd, dict), "a dict")
    epoch, position = int(sd["epoch"]), int(sd["position"])
    _expect(0 <= epoch < 2**63 and 0 <= position < 2**63, "an epoch and a position from 0 to 2^63")
    return dict(sd, epoch=epoch, position=position)


def _rng_state(flat):
    state = {"torch": flat.encode(torch.get_rng_state(), "rng.torch"),
             "python": flat.encode(random.getstate(), "rng.python")}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = flat.encode(torch.cuda.get_rng_state_all(), "rng.cuda")
    np = sys.modules.get("numpy")
    if np is not None:
        state["numpy"] = flat.encode(np.random.get_state(), "rng.numpy")
    return state


def _decode_rng(enc, tensors):
    """The random states, each set on a scratch generator first so that setting them cannot fail halfway."""
    _expect(isinstance(enc, dict), "a dict")
    states = {"torch": _decode(enc["torch"], tensors), "python": _decode(enc["python"], tensors)}
    torch.Generator().set_state(states["torch"])
    random.Random().setstate(states["python"])
    _expect(states["python"][2] is None or isinstance(states["python"][2], float), "a float or None as gauss_next")
    if "cuda" in enc:
        cuda = _decode(enc["cuda"], tensors)
        _expect(isinstance(cuda, list) and all(isinstance(s, torch.Tensor) and s.dtype == torch.uint8 for s in cuda),
                "a list of uint8 tensors in cuda")
        states["cuda"] = cuda
    if "numpy" in enc:
        import numpy as np
        states["numpy"] = _decode(enc["numpy"], tensors)
        np.random.RandomState().set_state(states["numpy"])
    return states


def _set_rng_state(states):
    torch.set_rng_state(states["torch"])
    random.setstate(states["python"])
    if "cuda" in states and torch.cuda.is_available():
        for i, s in enumerate(states["cuda"][:torch.cuda.device_count()]):
            torch.cuda.set_rng_state(s, i)
    if "numpy" in states:
        import numpy as np
        np.random.set_state(states["numpy"])


def _checkpoint_part(file, part, fn, *args, decoding=False):
    """fn(*args), its failure frugal.Error(invalid) naming the checkpoint: the checksum covers the
    tensors, not the JSON beside them, so a damaged or crafted python.state or loader position is
    found here. Decoding allocates no more than the file holds (_Tensors), so any failure of it,
    MemoryError included, is the file's; applying the decoded state (load_state_dict) running out of
    memory is no fault of the file and stays as it is."""
    try:
        return fn(*args)
    except (MemoryError, torch.cuda.OutOfMemoryError):
        if not decoding:
            raise
        e = sys.exc_info()[1]
        raise _error("invalid", f"{file}: expected the training state that frugal.Checkpointer.save wrote, found "
                     f"{part} that will not load ({type(e).__name__} while decoding it); remove that file to resume "
                     "from the checkpoint before it") from e
    except Exception as e:
        why = f"{type(e).__name__}: {e}"
        if len(why) > 200:
            why = why[:200] + "..."
        raise _error("invalid", f"{file}: expected the training state that frugal.Checkpointer.save wrote, found "
                     f"{part} that will not load ({why}); remove that file to resume from the checkpoint before it "
                     "(or restore with the model, optimizer, scheduler and scaler it was saved with)") from e


class _Resume:
    """What restore() brings back, decoded and checked whole before any of it is applied, so that a
    bad part leaves the model, optimizer and random states as they were."""

    def __init__(self, found, optimizer, scheduler, scaler, loader):
        self.file = found["file"]
        self.steps = []  # (part, how it is applied, its state) in the order they are applied
        tensors = _Tensors(found["state"])
        py_state = self._part("python.state", _decode_python_state, found["extra"].get("python.state", b"{}"))
        if optimizer is not None and "optimizer" in py_state:
            self._add("python.state's optimizer state", optimizer.load_state_dict,
                      _decode_optimizer, py_state["optimizer"], tensors, optimizer)
        if scheduler is not None and "scheduler" in py_state:
            self._add("python.state's scheduler state", scheduler.load_state_dict,
                      _decode_dict, py_state["scheduler"], tensors)
        if scaler is not None and "scaler" in py_state:
            self._add("python.state's scaler state", scaler.load_state_dict,
                      _decode_scaler, py_state["scaler"], tensors, scaler)
        if loader is not None:
            self._add("the loader position", loader.load_state_dict, _decode_loader, found["loader"])
        if "rng" in py_state:
            self._add("python.state's random states", _set_rng_state, _decode_rng, py_state["rng"], tensors)

    def _part(self, part, fn, *args, decoding=True):
        return _checkpoint_part(self.file, part, fn, *args, decoding=decoding)

    def _add(self, part, apply, decode, *args):
        state = self._part(part, decode, *args)
        if state is not None:  # a loader position saved without a loader
            self.steps.append((part, apply, state))

    def apply(self):
        for part, apply, state in self.steps:
            self._part(part, apply, state, decoding=False)


def _state_bytes_estimate(model, optimizer):
    """Bytes the optimizer's state will take: what it holds, or before its first step (Adam and the
    like create theirs then) two tensors per parameter for optimizers with betas, one with momentum."""
    if optimizer is None:
        return 0
    held = sum(v.nbytes for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor))
    if held:
        return held
    total = 0
    for group in optimizer.param_groups:
        per = 2 if "betas" in group else (1 if group.get("momentum", 0) else 0)
        total += per * sum(p.nbytes for p in group["params"])
    return total


def _group_size():
    d = torch.distributed
    return d.get_world_size() if d.is_available() and d.is_initialized() else 1


def _any_rank(flag):
    """Whether `flag` is true on any rank of the default process group (NCCL reduces CUDA tensors)."""
    d = torch.distributed
    device = torch.device("cuda", torch.cuda.current_device()) if d.get_backend() == "nccl" else "cpu"
    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=device)
    d.all_reduce(t, op=d.ReduceOp.MAX)
    return bool(t.item())


_SIGNALS = [s for s in (getattr(signal, n, None) for n in ("SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1")) if s]

# The run folders this process's open Checkpointers hold ((st_dev, st_ino) -> a weak reference): the
# folder's lock refuses a second one, but names only another process as its holder, so a notebook
# cell run twice was told "in use by another frugal process". A second one here is refused saying so.
_held_lock = threading.Lock()
_held = {}


def _folder_key(run):
    try:
        st = os.stat(run)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _holder_here(key):
    """The open Checkpointer of this process holding the run folder `key`, or None."""
    with _held_lock:
        ref = _held.get(key)
    held = ref() if ref is not None else None
    if held is None or held._closed or held._pid != os.getpid():
        return None
    return held


def _refuse_second(run):
    """frugal.Error(io) when an open Checkpointer of this process holds `run` already (one left
    unreachable in a reference cycle is collected first: it gives the folder back as it goes)."""
    key = _folder_key(run)
    if key is None or _holder_here(key) is None:
        return
    import gc
    gc.collect()
    first = _holder_here(key)
    if first is None:
        return
    raise _error("io", f"{os.fspath(run)}: in use by another frugal.Checkpointer of this process (pid {os.getpid()}, "
                 f"made for {first.run}); one run folder has one Checkpointer at a time: close() the first one "
                 "(or `del` it, or make it in a `with` block, whose end gives the folder back), then make this one")


def _plain_module(model):
    """The module a torch.compile()d model wraps (OptimizedModule._orig_mod), so that its checkpoints
    keep the model's own state_dict() names (not "_orig_mod.*", which the plain model cannot load)
    and restore into either; any other model as it is."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")  # imported by torch.compile() only
    wrapper = getattr(eval_frame, "OptimizedModule", None) if eval_frame is not None else None
    while wrapper is not None and isinstance(model, wrapper):
        model = model._orig_mod
    return model


_COMPILED_PREFIX = "_orig_mod."


def _weights_for(model, weights):
    """A checkpoint's weights for `model`: those an earlier frugal saved from a torch.compile()d model
    (every name "_orig_mod.*") with the prefix taken off when the model's names have none."""
    if not weights or not all(k.startswith(_COMPILED_PREFIX) for k in weights):
        return weights
    if any(k.startswith(_COMPILED_PREFIX) for k in model.state_dict()):
        return weights
    return {k[len(_COMPILED_PREFIX):]: v for k, v in weights.items()}


class Checkpointer:
    """Crash-safe checkpoints of a Python training loop in a frugal run folder.

    Each save is a safetensors file written in the background, published by an atomic rename and
    checksummed, so a session killed at any moment leaves the previous checkpoint intact; restore()
    takes the newest one that verifies. The model's tensors keep its state_dict() names, so
    `model.load_state_dict(safetensors.torch.load_file(ckpt))` works without frugal; `frugal du` and
    `frugal clean` know the folder. keep_last checkpoints are kept; disk_budget ("4G") bounds what
    the run folder's workspace (its parent folder) may hold, checked before training.

    deadline ("7h40m", or "HH:MM") and SIGTERM/SIGINT/SIGHUP/SIGUSR1 make should_stop() true: call
    it once per step; it measures what a step costs (batch wait included) and what a save costs, and
    says stop while one more step and a save still end before the deadline. A second signal acts as
    it would have without frugal (KeyboardInterrupt for SIGINT, also in Jupyter, also when both
    arrived within one step). The previous handlers come back on close() or at the end of a `with`
    block. Under torchrun only rank 0 writes.

    A run folder has one Checkpointer at a time: a second one on it, in this process too (a notebook
    cell run twice), is frugal.Error (kind "io") naming the holder; close() the first (or `del` it, or
    use `with`). A torch.compile()d model is saved and restored under its own module's names.
    """

    def __init__(self, run, disk_budget=None, keep_last=2, deadline=None, *, workspace=None, rank=None,
                 signals=True):
        if rank is None:
            rank = _core.rank_world()[0]
        self.rank = rank
        self._pid = os.getpid()
        self._closed = False
        if rank == 0:
            _refuse_second(run)
        self._core = _core.Checkpointer(run=os.fspath(run), disk_budget=disk_budget, keep_last=keep_last,
                                        deadline=deadline, workspace=None if workspace is None else os.fspath(workspace),
                                        writes=rank == 0)
        self._previous = {}
        self._signal = None
        self._arrivals = 0
        self._prepared = False
        self._saved_step = None
        key = _folder_key(run) if rank == 0 else None
        if key is not None:
            with _held_lock:
                _held[key] = weakref.ref(self)
        if signals:
            self._install_signals()

    @property
    def run(self):
        return self._core.run

    # -- signals --
    def _install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            print("frugal: warning: Checkpointer made outside the main thread: signals are not caught "
                  "(should_stop() follows the deadline only)", file=sys.stderr)
            return
        me = weakref.WeakMethod(self._on_signal)

        def handler(sig, frame):
            method = me()
            if method is not None:
                method(sig, frame)

        self._arrivals = _core.signal_arrivals()
        for sig in _SIGNALS:
            self._previous[sig] = signal.getsignal(sig)
            signal.signal(sig, handler)
            _core.count_signals(sig)

    def _on_signal(self, sig, frame):
        # Python calls this once for all the arrivals of `sig` while the main thread was in C (one
        # long step): the core counted each, so a second Ctrl-C within one step still stops at once.
        arrived = _core.signal_arrivals() - self._arrivals
        if self._signal is None:
            self._signal = sig
            self._core.signal_arrived(sig)
            if arrived < 2:
                print(f"frugal: {signal.Signals(sig).name}: the loop stops saved at its next should_stop(); send it "
                      "again to stop at once", file=sys.stderr, flush=True)
                return
        previous = self._previous.get(sig, signal.SIG_DFL)
        self._restore_signals()
        if callable(previous):
            previous(sig, frame)
        elif previous != signal.SIG_IGN:
            signal.raise_signal(sig)

    def _restore_signals(self):
        previous, self._previous = self._previous, {}
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    # -- checkpoints --
    def restore(self, model, optimizer=None, scheduler=None, scaler=None, loader=None):
        """Brings back the newest checkpoint, bitwise: the model, the optimizer's state, the scheduler,
        the GradScaler, the loader's position and the random states (torch CPU and CUDA, Python's
        random, NumPy's global one). Returns its step, or None when the run folder has none.

        Call it before training, also in a new run: it checks that the disk (and disk_budget) can keep
        the run resumable, raising frugal.Error (kind "budget") with nothing written when it cannot.
        A checkpoint whose Python state or loader position does not load is frugal.Error (kind
        "invalid") naming the file; that state is decoded and checked whole before any of it is applied."""
        self._check_open("restore")
        model = _plain_module(model)
        weight_bytes = sum(t.nbytes for t in model.state_dict().values())
        state_bytes = _state_bytes_estimate(model, optimizer) + (1 << 16)
        self._core.prepare(weight_bytes, state_bytes)
        self._prepared = True
        found = self._core.load_latest()
        if found is None:
            self._core.restart_step_clock()
            return None
        resume = _Resume(found, optimizer, scheduler, scaler, loader)
        self._saved_step = found["step"]
        model.load_state_dict(_weights_for(model, found["weights"]))
        resume.apply()
        print(f"frugal: resumed {self.run} at step {found['step']} ({os.path.basename(found['file'])})",
              file=sys.stderr)
        self._core.restart_step_clock()
        return found["step"]

    def save(self, step, model, optimizer=None, scheduler=None, scaler=None, loader=None, metrics=None):
        """Saves in the background (the loop waits only while the tensors are copied to host memory):
        atomic, checksummed, within the disk budget; keep_last newest are kept. An error of the
        previous save is raised here or by wait()."""
        self._check_open("save")
        if step == self._saved_step:  # saved already (a cadence save, then a stop at the same step)
            return
        if not self._prepared:
            raise _error("usage", "frugal.Checkpointer.save: expected restore() before the first save (it checks "
                         "the disk and finds where to resume)")
        model = _plain_module(model)
        flat = _Flat()
        py_state = {"rng": _rng_state(flat)}
        if optimizer is not None:
            py_state["optimizer"] = _encode_optimizer(optimizer, model, flat)
        if scheduler is not None:
            py_state["scheduler"] = flat.encode(scheduler.state_dict(), "scheduler")
        if scaler is not None:
            py_state["scaler"] = flat.encode(scaler.state_dict(), "scaler")
        metrics = {k: float(v.detach()) if isinstance(v, torch.Tensor) else float(v) for k, v in (metrics or {}).items()}
        cls = type(model)
        extra = {"python.state": json.dumps(py_state), "python.module": f"{cls.__module__}.{cls.__qualname__}"}
        info = {"name": "python", "classes": loader.classes if loader is not None else [],
                "image_size": loader.image_size if loader is not None else 0,
                "channels": loader.channels if loader is not None else 0,
                "mean": list(IMAGENET_MEAN) if loader is not None and loader.normalize else [],
                "std": list(IMAGENET_STD) if loader is not None and loader.normalize else [],
                "multi_label": bool(loader is not None and loader.multi_label)}
        weights = {k: v.detach() for k, v in model.state_dict().items()}
        self._saved_step = step
        self._core.save(step=int(step), epoch=loader.epoch if loader is not None else 0, weights=weights,
                        state=flat.tensors, loader=json.dumps(loader.state_dict() if loader is not None else {}),
                        metrics=json.dumps(metrics), extra=extra, model=info)

    def should_stop(self):
        """True when the loop should save and stop now: a signal arrived, or the deadline leaves room for
        no more than a save. Call once per step (it measures the steps between calls).

        Under torch.distributed (a process group initialized, more than one rank) the ranks agree:
        it is true on every rank when it is on any (one all-reduce per call, so every rank must call
        it at every step), so they all stop after the same step."""
        self._check_open("should_stop")
        self._core.step_ended()
        reason = self._core.should_stop()
        stop = reason is not None
        if _group_size() > 1:
            everyone = _any_rank(stop)
            if everyone and not stop:
                reason = "stop of another rank"
            stop = everyone
        if stop and not getattr(self, "_said_stop", False):
            self._said_stop = True
            print(f"frugal: stopping at the {reason}: save, wait() and exit {EXIT_RESUMABLE}; rerun to resume",
                  file=sys.stderr, flush=True)
        return stop

    def wait(self):
        """Waits for the pending save; returns what the last save did ({"status", "file", "bytes", ...})."""
        return self._core.wait()

    @property
    def resumable_step(self):
        """Step of the newest checkpoint written or restored (what a rerun resumes from), or None."""
        return self._core.resumable_step()

    def close(self):
        """Waits for the pending save, gives the run folder back and restores the signal handlers."""
        self._closed = True
        self._restore_signals()
        return self._core.close()

    def _check_open(self, method):
        if self._closed:
            raise _error("usage", f"frugal.Checkpointer.{method}: expected an open checkpointer, found it closed "
                         "(close() or the end of its `with` block gave the run folder back); make a new "
                         "frugal.Checkpointer for the run folder to go on")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self._restore_signals()
        except Exception:
            pass


# ---- Archives ------------------------------------------------------------------------------------

def split(path, size="1000M", out=None):
    """Cuts a file into parts of `size` with a SHA-256 manifest (as `frugal split`); returns the
    manifest's path, the parts and their hashes."""
    return _core.split(path=os.fspath(path), size=str(size), out=_text(out))


def join(manifest, out=None, delete_parts=False):
    """Joins a split set back, verified part by part, resumable (as `frugal join`)."""
    return _core.join(manifest=os.fspath(manifest), out=_text(out), delete_parts=delete_parts)


def verify(path, threads=0):
    """Checks an archive or split set (as `frugal verify --json`): {"ok", "bad", ...}."""
    return json.loads(_core.verify(path=os.fspath(path), threads=threads))


# ---- Report --------------------------------------------------------------------------------------

def _program(name):
    """frugal/bin/NAME of a wheel, else the build's own (an install from source), else PATH's."""
    import shutil
    for exe in (os.path.join(os.path.dirname(__file__), "bin", name),
                os.path.join(_build_info.bin_dir, name)):
        if os.access(exe, os.X_OK):
            return exe
    found = shutil.which(name)
    if not found:
        raise _error("io", f"frugal report: the {name} program was not found (a wheel's frugal/bin/, "
                           f"{_build_info.bin_dir}, PATH); install a wheel made by `make wheel`, or build the "
                           f"programs with `make tools`")
    return found


class Report:
    """A run's report page (`frugal report`): .path is the HTML file, .html its text; in Jupyter it
    shows inline (_repr_html_: the page in a sandboxed iframe, which runs no script)."""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.html = f.read()

    def __repr__(self):
        return f"frugal.Report({self.path!r})"

    def _repr_html_(self):
        import html
        return ('<iframe sandbox style="width:100%;height:900px;border:1px solid #ccc" srcdoc="'
                + html.escape(self.html, quote=True) + '"></iframe>')


def report(run, out=None, data=None, worst=64):
    """Writes the run folder's report page (as `frugal report RUN [-o out] [--data data]`: curves,
    confusion matrix, worst images, facts; docs/cli.md) and returns it as a Report, which a
    notebook displays inline. Errors are frugal.Error with the CLI's message and exit code."""
    import subprocess
    args = [_program("frugal-torch"), "report", os.fspath(run), "--worst", str(int(worst))]
    if out is not None:
        args += ["-o", os.fspath(out)]
    if data is not None:
        args += ["--data", os.fspath(data)]
    r = subprocess.run(args, capture_output=True, text=True, errors="replace")
    if r.returncode != 0:
        kind = {2: "usage", 3: "invalid", 4: "budget", 75: "interrupted"}.get(r.returncode, "io")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        raise _error(kind, lines[-1] if lines else f"frugal report: exit {r.returncode}")
    return Report(r.stdout.strip().splitlines()[-1])
