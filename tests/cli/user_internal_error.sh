#!/usr/bin/env bash
# Issue 47 item 8: an error frugal did not foresee (here a TorchScript module raising inside
# predict: LibTorch's message runs over several lines, with its traceback) was printed as one line
# of literal "\n"s. Its lines are printed as lines, indented under the first, and what they quote
# is still escaped: a control character from the module's text never reaches the terminal raw.
source "$(dirname "$0")/lib/common.sh"
needs_python torch numpy PIL
needs_commands frugal frugal-torch
keep_going
cd "$t"
make_two_class_zip data.zip 16
# torch.jit.script reads the module's source, so it is run from a file, not stdin.
cat >make_module.py <<'PY'
import os
import numpy as np
import torch
from PIL import Image

class Raises(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = torch.nn.AdaptiveAvgPool2d(4)
        self.fc = torch.nn.Linear(3 * 16, 2)
        # An attribute, so that no source line the traceback quotes holds the escapes.
        self.message = "five images" + chr(10) + "second line " + chr(27) + "[2J"

    def forward(self, x):
        if x.size(0) == 5:
            raise RuntimeError(self.message)
        return self.fc(torch.flatten(self.pool(x), 1))

torch.jit.save(torch.jit.script(Raises()), "raises.pt")
os.makedirs("five")
rng = np.random.default_rng(0)
for i in range(5):
    Image.fromarray(rng.integers(0, 255, (28, 28), dtype=np.uint8)).save(f"five/{i}.png")
PY
"$py" make_module.py || die "could not script the module"
frugal train --data data.zip --run run --model raises.pt --allow-model-code --channels 3 --image-size 28 \
  --epochs 1 --batch-size 8 --workers 1 --val-split 0 >train.out 2>train.err || die "training failed" train.err
expect_exit "a module raising inside predict: exit 1 (internal error)" 1 frugal predict run five/
expect_msg "said as an internal error" "frugal predict: internal error: "
check "its lines printed as lines, not as literal \\n" '! grep -qF "\\n" "$t/err" && [ "$(wc -l <"$t/err")" -gt 1 ]'
check "the lines after the first indented under it" \
  '[ -z "$(sed -n "/internal error/,\$p" "$t/err" | tail -n +2 | grep -v "^  ")" ]'
expect_msg "the module's own text kept, its escape escaped" "second line \\x1b[2J"
check "no control character but the line breaks" \
  '"$py" -c "import sys; d=open(sys.argv[1],\"rb\").read(); sys.exit(1 if any(b < 32 and b != 10 or b == 127 for b in d) else 0)" "$t/err"'
finish
