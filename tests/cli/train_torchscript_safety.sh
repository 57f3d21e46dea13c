#!/usr/bin/env bash
# A TorchScript module is code that runs with the user's rights (docs/models.md): what frugal holds
# it to before and while it runs.
# - The allowlist: a module holding an op outside it (files: aten::from_file, aten::save; printing:
#   prim::Print; the generator's seed: aten::manual_seed; another namespace: profiler::) is refused,
#   exit 3, naming the op and where, also when a submodule's method or a called function holds it;
#   a __setstate__ (run by loading) is refused before loading. Nothing of it ran (the file a shared
#   mapping would write is unchanged). --allow-model-code lifts it.
# - torchvision's resnet18, mobilenet_v3_small, efficientnet_b0 (scripted and traced) and timm's
#   resnet18 (scripted) pass it and train.
# - A forward that never returns: the deadline plus --stop-grace ends the process (exit 1 without a
#   checkpoint, 75 with one), as does a signal plus the grace; a second signal exits 1 when nothing
#   was saved.
# - A module changed after training is refused by eval, predict, compress and resume, before it is
#   loaded.
# - A small deflated module unpacking to 1 GiB is refused before anything is unpacked.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL torch
needs_commands frugal frugal-torch
pid=
on_exit '[[ -n $pid ]] && kill -KILL $pid 2>/dev/null'
keep_going

make_two_class_zip "$t/data.zip" 16
printf 'untouched' > "$t/victim"
cat > "$t/mods.py" <<'PY'
import sys, torch, torch.nn as nn
d = sys.argv[1]
victim = f"{d}/victim"

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.head = nn.Linear(4 * 16, 2)
        self.victim = victim
    def features(self, x):
        return torch.flatten(nn.functional.adaptive_avg_pool2d(torch.relu(self.conv(x)), 4), 1)
    def forward(self, x):
        return self.head(self.features(x))

class FromFile(Net):  # overwrites a file through a shared mapping
    def forward(self, x):
        m = torch.from_file(self.victim, shared=True, size=9, dtype=torch.uint8)
        m.fill_(88)
        return self.head(self.features(x)) + 0 * m[0]  # used: not removed as dead code

class Save(Net):
    def forward(self, x):
        torch.save(x, self.victim)
        return self.head(self.features(x))

class Child(nn.Module):
    def helper(self, x):
        print("a step")
        return x
    def forward(self, x):
        return x

class Printing(Net):  # prim::Print in a submodule's method that forward calls
    def __init__(self):
        super().__init__()
        self.child = Child()
    def forward(self, x):
        return self.head(self.features(self.child.helper(x)))

def reseed(x: torch.Tensor) -> torch.Tensor:
    torch.manual_seed(0)
    return x

class Seeding(Net):  # aten::manual_seed in a function that forward calls
    def forward(self, x):
        return self.head(self.features(reseed(x)))

class OtherNamespace(Net):
    def forward(self, x):
        h = torch.ops.profiler._record_function_enter_new("x", None)
        torch.ops.profiler._record_function_exit(h)
        return self.head(self.features(x))

class SetState(Net):  # code that torch::jit::load runs
    def __init__(self):
        super().__init__()
        self.seen = torch.zeros(())
    @torch.jit.export
    def __getstate__(self):
        return (self.conv, self.head, self.training, self.victim)
    @torch.jit.export
    def __setstate__(self, state: tuple[nn.Conv2d, nn.Linear, bool, str]):
        self.conv = state[0]
        self.head = state[1]
        self.training = state[2]
        self.victim = state[3]
        m = torch.from_file(self.victim, shared=True, size=9, dtype=torch.uint8)
        m.fill_(88)
        self.seen = m.sum()  # kept: not removed as dead code

class Hang(Net):  # loops forever from its forward call number `after` + 1 on
    def __init__(self, after: int):
        super().__init__()
        self.after = after
        self.register_buffer("calls", torch.zeros(1))
    def forward(self, x):
        self.calls += 1
        if bool(self.calls[0] > self.after):
            n = torch.zeros(1)
            while bool(n[0] >= 0):
                n = n + 1
        return self.head(self.features(x))

torch.manual_seed(0)
for name, m in [("from_file", FromFile()), ("save", Save()), ("print", Printing()), ("seed", Seeding()),
                ("namespace", OtherNamespace()), ("setstate", SetState()), ("net", Net()),
                ("hang0", Hang(0)), ("hang6", Hang(6))]:
    torch.jit.save(torch.jit.script(m), f"{d}/{name}.pt")
torch.manual_seed(1)
torch.jit.save(torch.jit.script(Net()), f"{d}/other.pt")
PY
"$py" "$t/mods.py" "$t" 2> "$t/mods.log" || die "scripting the test's modules" "$t/mods.log"
args=(--data "$t/data.zip" --image-size 28 --batch-size 4 --workers 1 --device cpu --val-split 0.25 --epochs 1)
intact() { [[ $(cat "$t/victim") == untouched ]]; }

# 1. The allowlist: each refused before it runs, naming the op and where it is.
refused() {  # refused NAME WHAT_THE_MESSAGE_NAMES
  expect_exit "$1: refused" 3 frugal train "${args[@]}" --model "$t/$1.pt" --run "$t/r-$1"
  expect_msg "$1: ...naming it: $2" "$2"
  expect_msg "$1: ...saying how to allow it" "--allow-model-code runs code from this file"
  check "$1: ...and nothing of it ran (the file is untouched, no run folder)" 'intact && [ ! -e "$t/r-$1" ]'
}
refused from_file "aten::from_file in forward"
refused save "aten::save in forward"
refused print "prim::Print in forward"
expect_msg "print: ...through the method that holds it" "Child.helper"
refused seed "aten::manual_seed in forward"
expect_msg "seed: ...through the function that holds it" "reseed"
refused namespace "profiler::_record_function_enter_new in forward"
expect_exit "setstate: refused before loading" 3 frugal train "${args[@]}" --model "$t/setstate.pt" --run "$t/r-setstate"
expect_msg "setstate: ...saying why" "a __setstate__ method (code that loading the module runs"
check "setstate: ...and it did not run" intact
# --allow-model-code lifts it: the module runs, and does what it holds.
expect_exit "from_file with --allow-model-code trains" 0 frugal train "${args[@]}" --model "$t/from_file.pt" \
  --allow-model-code --run "$t/r-allowed"
check "...and its forward wrote through the shared mapping" '[[ $(cat "$t/victim") == XXXXXXXXX ]]'
printf 'untouched' > "$t/victim"
expect_exit "eval of that run without --allow-model-code" 3 frugal eval "$t/r-allowed" --data "$t/data.zip"
expect_msg "...naming the op" "aten::from_file in forward"
check "...and it did not run" intact

# 2. Real models pass: torchvision's scripted and traced, timm's scripted.
if "$py" -c 'import torchvision' 2>/dev/null; then
  "$py" - "$t" <<'PY' 2> "$t/zoo.log" || die "scripting torchvision's models" "$t/zoo.log"
import sys, torch, torchvision.models as tvm
d = sys.argv[1]
x = torch.randn(2, 3, 32, 32)
for name in ["resnet18", "mobilenet_v3_small", "efficientnet_b0"]:
    torch.manual_seed(0)
    m = getattr(tvm, name)(num_classes=2)
    torch.jit.save(torch.jit.script(m), f"{d}/tv-{name}-script.pt")
    m.eval()
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(m, x, check_trace=False), f"{d}/tv-{name}-trace.pt")
PY
  for m in resnet18 mobilenet_v3_small efficientnet_b0; do
    for how in script trace; do
      expect_exit "torchvision $m ($how) trains" 0 frugal train "${args[@]}" --channels 3 --image-size 32 \
        --model "$t/tv-$m-$how.pt" --run "$t/tv-$m-$how"
    done
  done
else
  echo "skip: torchvision is not installed (the torchvision cases)"
fi
if "$py" -c 'import timm' 2>/dev/null; then
  "$py" - "$t" <<'PY' 2> "$t/timm.log" || die "scripting timm's resnet18" "$t/timm.log"
import sys, timm, torch
torch.manual_seed(0)
torch.jit.save(torch.jit.script(timm.create_model("resnet18", pretrained=False, num_classes=2)), f"{sys.argv[1]}/timm.pt")
PY
  expect_exit "timm resnet18 (script) trains" 0 frugal train "${args[@]}" --channels 3 --image-size 32 \
    --model "$t/timm.pt" --run "$t/timm"
else
  echo "skip: timm is not installed (the timm case)"
fi

# 3. A forward that never returns. Each run is capped (timeout) so that a watchdog that does not
# fire fails the test rather than hanging it.
timed() {  # timed NAME WANT_RC MIN_S MAX_S CMD...: exit WANT_RC after MIN_S..MAX_S seconds
  local name=$1 want=$2 lo=$3 hi=$4 start end rc=0
  shift 4
  start=$(date +%s.%N)
  timeout -s KILL 60 "$@" > "$t/out" 2> "$t/err" || rc=$?
  end=$(date +%s.%N)
  elapsed=$("$py" -c "print(round($end - $start, 1))")
  check "$name: exit $rc (expected $want) after ${elapsed}s (expected $lo to $hi s)" \
    "[ $rc -eq $want ] && \"$py\" -c 'import sys; sys.exit(0 if $lo <= $elapsed <= $hi else 1)'"
}
hang=("${args[@]}" --epochs 3 --save-every 2steps --stop-grace 2s)
timed "a forward that hangs at once, --deadline 8s --stop-grace 2s" 1 9 14 \
  frugal train "${hang[@]}" --model "$t/hang0.pt" --deadline 8s --run "$t/hang0"
expect_msg "...saying the deadline and its grace passed" "the deadline passed 2s ago (the stop grace)"
expect_msg "...and that nothing was saved" "no checkpoint was saved"
timed "a forward that hangs after 6 calls, --deadline 12s --stop-grace 2s" 75 13 18 \
  frugal train "${hang[@]}" --model "$t/hang6.pt" --deadline 12s --run "$t/hang6"
expect_msg "...saying a rerun resumes from the last checkpoint" "a rerun of the same command resumes from step"
check "...which exists" '(($(newest_step "$t/hang6") >= 2))'

# A signal: the first asks to stop after the step, which never ends: the grace ends it.
signal_hung() {  # signal_hung NAME MODULE SIGNALS: SIGTERM(s) once the forward hangs; rc, elapsed
  local name=$1 module=$2 n=$3 start i
  frugal train "${args[@]}" --epochs 3 --save-every 2steps --stop-grace 2s --model "$t/$module.pt" \
    --run "$t/sig-$name" > /dev/null 2> "$t/err" &
  pid=$!
  for ((i = 0; i < 300; i++)); do  # hang0: the model is described, then its forward hangs
    if [[ $module == hang6 ]]; then (($(newest_step "$t/sig-$name") >= 2)) && break; else grep -q "^model: " "$t/err" && break; fi
    sleep 0.1
  done
  sleep 2
  start=$(date +%s.%N)
  for ((i = 0; i < n; i++)); do kill -TERM $pid; sleep 0.2; done
  for ((i = 0; i < 150; i++)); do [[ -d /proc/$pid && $(cut -d' ' -f3 /proc/$pid/stat) != Z ]] || break; sleep 0.1; done
  kill -KILL $pid 2>/dev/null
  set +e; wait $pid; rc=$?
  pid=
  elapsed=$("$py" -c "print(round($(date +%s.%N) - $start, 1))")
}
signal_hung one hang6 1
check "one SIGTERM, the forward hung after a checkpoint: exit 75 (was $rc) within the grace (${elapsed}s)" \
  "[ $rc -eq 75 ] && \"$py\" -c 'import sys; sys.exit(0 if $elapsed <= 5 else 1)'"
expect_msg "...saying the signal and its grace passed" "SIGTERM arrived 2s ago (the stop grace)"
signal_hung two hang0 2
check "two SIGTERMs, nothing saved: exit 1 (was $rc) at once (${elapsed}s)" \
  "[ $rc -eq 1 ] && \"$py\" -c 'import sys; sys.exit(0 if $elapsed <= 2 else 1)'"
expect_msg "...saying nothing was saved" "second signal, stopping now; no checkpoint was saved"

# 4. The module a run recorded, changed: refused by every command that would run it.
cp "$t/net.pt" "$t/swap.pt"
expect_exit "a run of swap.pt" 0 frugal train "${args[@]}" --model "$t/swap.pt" --run "$t/swap"
cp "$t/other.pt" "$t/swap.pt"
expect_exit "eval with the module changed" 3 frugal eval "$t/swap" --data "$t/data.zip"
expect_msg "...naming both" "another module (sha256"
expect_exit "predict with the module changed" 3 frugal predict "$t/swap" "$t/data.zip:dark/000.png"
expect_msg "...naming both" "another module (sha256"
expect_exit "compress with the module changed" 3 frugal compress "$t/swap" -o "$t/swap.safetensors" --prune 0.5
expect_msg "...naming both" "another module (sha256"
expect_exit "resume with the module changed" 2 frugal train "${args[@]}" --model "$t/swap.pt" --run "$t/swap"
expect_msg "...naming the trained one" "the model this run was trained with (TorchScript module sha256"
# Held to the SHA-256 before it is loaded: a changed module's load-time code never runs, even with
# --allow-model-code.
cp "$t/setstate.pt" "$t/swap.pt"
expect_exit "eval --allow-model-code, the module changed to one whose loading writes a file" 3 \
  frugal eval "$t/swap" --data "$t/data.zip" --allow-model-code
expect_msg "...naming both" "another module (sha256"
check "...refused before loading it (the file is untouched)" intact

# 5. A 1 GiB buffer deflated into a small file: refused from the zip directory, nothing unpacked.
cat > "$t/big.py" <<'PY'  # a file: TorchScript reads the class's source
import os, shutil, sys, torch, torch.nn as nn, zipfile
d = sys.argv[1]
class Big(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.register_buffer("pad", torch.zeros(1 << 28))  # 1 GiB of float32 zeros
    def forward(self, x):
        return torch.flatten(nn.functional.adaptive_avg_pool2d(self.conv(x), 1), 1)
torch.jit.save(torch.jit.script(Big()), f"{d}/stored.pt")
with zipfile.ZipFile(f"{d}/stored.pt") as src, zipfile.ZipFile(f"{d}/big.pt", "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        entry = zipfile.ZipInfo(info.filename)
        entry.compress_type = zipfile.ZIP_DEFLATED
        with src.open(info) as r, dst.open(entry, "w", force_zip64=True) as w:
            shutil.copyfileobj(r, w, 1 << 24)
os.remove(f"{d}/stored.pt")
print(os.path.getsize(f"{d}/big.pt"))
PY
"$py" "$t/big.py" "$t" > "$t/big.size" 2> "$t/big.log" || die "making the deflated module" "$t/big.log"
echo "the deflated module: $(cat "$t/big.size") bytes"
expect_exit "a deflated module unpacking to 1 GiB" 3 /usr/bin/time -v -o "$t/time" frugal train "${args[@]}" \
  --model "$t/big.pt" --run "$t/big"
expect_msg "...saying what it unpacks to" "entries that unpack to 1024 MiB"
peak=$(awk '/Maximum resident/ {print $NF}' "$t/time")
# What refusing a small module costs (LibTorch's own start-up is most of it), to compare with.
expect_exit "a small module refused for its op, for comparison" 3 /usr/bin/time -v -o "$t/time" frugal train \
  "${args[@]}" --model "$t/print.pt" --run "$t/small"
base=$(awk '/Maximum resident/ {print $NF}' "$t/time")
check "...refused before unpacking: peak RSS ${peak} KiB, within 64 MiB of a small module's ${base} KiB" \
  '[ -n "$peak" ] && [ -n "$base" ] && ((peak < base + 64 * 1024))'
finish
