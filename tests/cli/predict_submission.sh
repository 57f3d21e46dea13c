#!/usr/bin/env bash
# A Kaggle submission from predict (issue 28 item 5): a folder of test images -> `id,label` CSV with
# one row per image in sorted order, ids without their extension, labels among the classes, files
# that are not images skipped and counted; the same rows from a zip and from ZIP:GLOB (which leaves
# other folders out); --csv-columns names the columns; --probabilities writes one column per class
# (rows sum to 1); two images with one id are refused with nothing written; --csv never replaces an
# input; a bad image is reported and the others written (exit 3); the CSV says what --json says.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
make_two_class_zip "$t/data.zip" 16
frugal train --data "$t/data.zip" --run run --model cnn --epochs 1 --batch-size 8 --workers 1 >/dev/null 2>"$t/train.log" ||
  die "training failed" "$t/train.log"
"$py" - <<'PY'
import io, os, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(7)
def png(lo, hi):
    b = io.BytesIO()
    Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(b, "PNG")
    return b.getvalue()
# Kaggle-like hex ids, written out of order; half bright, half dark.
images = {f"{i * 7919 % 4096:03x}": png(160, 255) if i % 2 else png(0, 96) for i in range(12)}
os.makedirs("test")
for k, d in images.items():
    open(f"test/{k}.png", "wb").write(d)
open("test/sample_submission.csv", "w").write("id,label\n")
open("test/.DS_Store", "wb").write(b"\0\0\0\1Bud1")
with zipfile.ZipFile("test.zip", "w") as z:
    for k in sorted(images, reverse=True):
        z.writestr(f"{k}.png", images[k])
with zipfile.ZipFile("competition.zip", "w") as z:
    for k, d in images.items():
        z.writestr(f"test/{k}.png", d)
    z.writestr("test/extra/deeper.png", png(0, 96))
    z.writestr("train/dark/0.png", png(0, 96))
    z.writestr("sample_submission.csv", "id,label\n")
os.makedirs("dup")
Image.fromarray(rng.integers(0, 96, (28, 28), dtype=np.uint8)).save("dup/a.png")
Image.fromarray(rng.integers(0, 96, (28, 28), dtype=np.uint8)).save("dup/a.jpg")
Image.fromarray(rng.integers(0, 96, (28, 28), dtype=np.uint8)).save("dup/b.png")
os.makedirs("bad")
open("bad/good.png", "wb").write(images[sorted(images)[0]])
open("bad/broken.png", "wb").write(b"not a png at all")
PY
ids=$(ls test/*.png | sed 's|test/||; s|\.png$||' | LC_ALL=C sort)

# The folder: the submission, in sorted order, what was skipped said.
expect_exit "a folder: exit 0" 0 frugal predict run test/ --csv sub.csv
check "header id,label" '[ "$(head -1 sub.csv)" == "id,label" ]'
check "one row per image, in sorted order, ids without extension" '[ "$(tail -n +2 sub.csv | cut -d, -f1)" == "$ids" ]'
check "labels among the classes" '[ -z "$(tail -n +2 sub.csv | cut -d, -f2 | grep -vx "bright\|dark")" ]'
check "both classes predicted (the model learned)" \
  '[ "$(tail -n +2 sub.csv | cut -d, -f2 | sort -u | tr "\n" " ")" == "bright dark " ]'
expect_msg "the CSV and the junk skipped, by reason" "test/: skipped 1 junk (.DS_Store) (e.g. .DS_Store), 1 not an image (e.g. sample_submission.csv)"
expect_msg "where the rows went" "wrote sub.csv: 12 rows"
check "no rows on stdout with --csv" '[ ! -s "$t/out" ]'

# The same images from a zip, and from a glob inside a competition's zip.
expect_exit "a zip: exit 0" 0 frugal predict run test.zip --csv zip.csv
check "a zip gives the same CSV" 'cmp -s sub.csv zip.csv'
expect_exit "ZIP:GLOB: exit 0" 0 frugal predict run 'competition.zip:test/*.png' --csv glob.csv
check "ZIP:GLOB gives the same CSV (not test/extra/, not train/)" 'cmp -s sub.csv glob.csv'
expect_exit "ZIP:GLOB matching nothing: exit 2" 2 frugal predict run 'competition.zip:test/*.jpg' --csv none.csv
expect_msg "it says what matched nothing" "expected entries matching 'test/*.jpg', found none"
check "ZIP:GLOB matching nothing: nothing written" '[ ! -e none.csv ]'

# Column names, and one probability column per class.
expect_exit "--csv-columns: exit 0" 0 frugal predict run test/ --csv named.csv --csv-columns image_id,label
check "--csv-columns names the header" '[ "$(head -1 named.csv)" == "image_id,label" ]'
check "--csv-columns: the same rows" '[ "$(tail -n +2 named.csv)" == "$(tail -n +2 sub.csv)" ]'
expect_exit "--csv-columns with one name: exit 2" 2 frugal predict run test/ --csv x.csv --csv-columns id
expect_exit "--probabilities: exit 0" 0 frugal predict run test/ --csv probs.csv --probabilities
if "$py" - probs.csv sub.csv >"$t/probs.log" 2>&1 <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
labels = list(csv.reader(open(sys.argv[2])))[1:]
assert rows[0] == ["id", "bright", "dark"], rows[0]
assert len(rows) - 1 == len(labels) == 12
for r, (i, label) in zip(rows[1:], labels):
    p = [float(x) for x in r[1:]]
    assert r[0] == i, (r[0], i)
    assert abs(sum(p) - 1) < 1e-5, r
    assert rows[0][1 + p.index(max(p))] == label, (r, label)
PY
then ok "--probabilities: classes as headers, rows sum to 1, argmax = the label"
else bad "--probabilities: classes as headers, rows sum to 1, argmax = the label" "$t/probs.log"; fi

# Two images with one id: refused, nothing written, an older submission kept.
echo "id,label" >kept.csv
expect_exit "duplicate ids: exit 3" 3 frugal predict run dup/ --csv kept.csv
expect_msg "both images named" "'a' (dup/a.jpg and dup/a.png)"
check "duplicate ids: the file there is unchanged" '[ "$(cat kept.csv)" == "id,label" ]'
expect_exit "duplicate ids, new file: exit 3" 3 frugal predict run dup/ --csv new.csv
check "duplicate ids: nothing written" '[ ! -e new.csv ] && [ -z "$(ls -a | grep frugal-tmp)" ]'

# Never over an input.
before=$(sum test.zip)
expect_exit "--csv naming the input: exit 2" 2 frugal predict run test.zip --csv test.zip
expect_msg "--csv naming the input: said so" "test.zip: expected a file to write the predictions to, found one of the inputs"
check "--csv naming the input: the input unchanged" '[ "$(sum test.zip)" == "$before" ]'

# A bad image: reported, the others written, exit 3.
expect_exit "a bad image: exit 3" 3 frugal predict run bad/ --csv bad.csv
expect_msg "the bad image named" "bad/broken.png"
check "the good image written" '[ "$(tail -n +2 bad.csv | cut -d, -f1)" == "good" ]'

# The CSV says what --json says for the same images.
expect_exit "--json: exit 0" 0 frugal predict run test/ --json
if "$py" - "$t/out" sub.csv >"$t/json.log" 2>&1 <<'PY'
import csv, json, sys
d = json.load(open(sys.argv[1]))
rows = [tuple(r) for r in list(csv.reader(open(sys.argv[2])))[1:]]
got = [(p["id"], p["predictions"][0]["class"]) for p in d["predictions"]]
assert got == rows, (got, rows)
assert all(p["image"].startswith("test/") for p in d["predictions"])
assert d["skipped"]["test/"] == {"junk (.DS_Store)": 1, "not an image": 1}, d["skipped"]
PY
then ok "the CSV equals --json's top class per image"
else bad "the CSV equals --json's top class per image" "$t/json.log"; fi
# Issue 47 (a): cells a spreadsheet would run. Class names and ids that start = + - @ are written
# as they are and warned about once per set, naming them (escaped); --csv-escape-formulas writes
# each as text after a ' (OWASP), quoted; a NUL or other control character in a cell is never
# written raw (escaped as \x00, \t), in the --probabilities header either.
mkdir -p "$t/hostile" && cd "$t/hostile"
"$py" - <<'PY'
import io, json, os, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(3)
def png(lo, hi):
    b = io.BytesIO()
    Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(b, "PNG")
    return b.getvalue()
with zipfile.ZipFile("data.zip", "w") as z:
    for c, (lo, hi) in enumerate([(200, 255), (0, 50), (100, 150), (60, 90)]):
        for i in range(8):
            z.writestr(f"{c}/{i}.png", png(lo, hi))
json.dump({"0": "=HYPERLINK(\"http://evil.example\",\"click\")", "1": "+cmd|' /C calc'!A0",
           "2": "@SUM(1+1)*cmd", "3": "nul\u0000byte\u001b[2J"}, open("names.json", "w"))
os.makedirs("test")
for name, (lo, hi) in [("=1+2", (200, 255)), ("-5", (0, 50)), ("@x", (100, 150)), ("plain", (60, 90)),
                       ("tab\there", (200, 255))]:
    open(f"test/{name}.png", "wb").write(png(lo, hi))
PY
frugal train --data data.zip --class-names names.json --run run --model cnn --epochs 1 --batch-size 8 --workers 1 \
  >/dev/null 2>"$t/htrain.log" || die "training with hostile class names failed" "$t/htrain.log"
# cells FILE: the CSV's cells, one per line, as Python's csv module reads them ("\x00" for a NUL).
cells() {
  "$py" -c 'import csv,sys; [print("".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in c)) for r in csv.reader(open(sys.argv[1], newline="")) for c in r]' "$1"
}
no_control() { "$py" -c 'import sys; d=open(sys.argv[1],"rb").read(); sys.exit(1 if any(b < 0x20 and b != 10 or b == 0x7f for b in d) else 0)' "$1"; }

expect_exit "hostile names, --probabilities: exit 0" 0 frugal predict run test/ --csv p.csv --probabilities
check "no NUL or other control byte in the CSV (the header held one)" 'no_control p.csv'
check "the NUL class name written escaped" 'head -1 p.csv | grep -qF "nul\\x00byte\\x1b[2J"'
check "formula class names written as they are (no flag)" \
  'cells p.csv | grep -qxF "=HYPERLINK(\"http://evil.example\",\"click\")" && cells p.csv | grep -qxF "@SUM(1+1)*cmd"'
expect_msg "warned: the class names that are formulas, named" '3 class names ("=HYPERLINK("http://evil.example","click")", "+cmd|'"'"' /C calc'"'"'!A0", "@SUM(1+1)*cmd") start cells that a spreadsheet would run'
expect_msg "warned: --csv-escape-formulas offered" "write it with --csv-escape-formulas"
expect_msg "warned: the ids that are formulas, named" '3 ids ("-5", "=1+2", "@x") start cells'
expect_msg "warned: the control characters, named escaped" 'control characters in 1 class name ("nul\x00byte\x1b[2J")'
expect_msg "warned: the id with a tab" 'control characters in 1 id ("tab\there")'
check "one warning per set (class names, ids)" '[ "$(grep -c "class names (" "$t/err")" -eq 1 ] && [ "$(grep -c "ids (" "$t/err")" -eq 1 ]'
check "the warnings hold no control character" 'no_control "$t/err"'

expect_exit "--csv-escape-formulas: exit 0" 0 frugal predict run test/ --csv e.csv --probabilities --csv-escape-formulas
check "no NUL or other control byte in it" 'no_control e.csv'
check "no cell starts = + - @ (each such one is text after a ')" '[ -s e.csv ] && ! cells e.csv | grep -q "^[-=+@]"'
check "escaped cells as OWASP writes them, quoted" \
  'head -1 e.csv | grep -qF "\"'"'"'=HYPERLINK(\"\"http://evil.example\"\",\"\"click\"\")\"" && grep -qF "\"'"'"'=1+2\"," e.csv'
check "a spreadsheet reads them as the names after the '" 'cells e.csv | grep -qxF "'"'"'@SUM(1+1)*cmd"'
expect_msg "said: written as text" "written as text (a ' before each, --csv-escape-formulas)"
check "not told to rerun with the flag it gave" '[ -s e.csv ] && ! grep -qF "write it with --csv-escape-formulas" "$t/err"'
expect_exit "labels, --csv-escape-formulas: exit 0" 0 frugal predict run test/ --csv l.csv --csv-escape-formulas
check "labels: no cell starts = + - @" '[ -s l.csv ] && ! cells l.csv | grep -q "^[-=+@]"'
check "labels: no control byte" 'no_control l.csv'
expect_exit "labels, no flag: exit 0" 0 frugal predict run test/ --csv l2.csv
check "labels: the ids as they are without the flag" 'cells l2.csv | grep -qxF "=1+2"'
cd "$t/w"
finish
