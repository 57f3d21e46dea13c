#!/usr/bin/env bash
# frugal report's page in a real headless browser (Debian's chromium through Selenium): a tiny run
# whose one class is named <script>alert(1)</script> (labels.csv inside the data), its report
# loaded from file://: no console error, no request but the page itself, no script and no alert,
# the curves, both confusion matrices and the worst images' thumbnails in the DOM, the crafted
# name shown as text. The page and a screenshot are kept in build/test-output/report_page/.
source "$(dirname "$0")/lib/common.sh"
needs_python PIL selenium
needs_commands frugal frugal-torch chromium chromedriver
keep_going

out=${FRUGAL_BINARY_DIR:-$src/build}/test-output/report_page
mkdir -p "$out"
"$py" - "$t/data.zip" <<'PY'
import csv, io, random, sys, zipfile
from PIL import Image, ImageDraw
rng = random.Random(0)
names = ["circle", "<script>alert(1)</script>", "line"]
rows = []
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for label, name in enumerate(names):
        for i in range(40):
            im = Image.new("L", (28, 28), 0)
            d = ImageDraw.Draw(im)
            x, y = rng.randint(2, 10), rng.randint(2, 10)
            if label == 0:
                d.ellipse((x, y, x + 14, y + 14), fill=255)
            elif label == 1:
                d.rectangle((x, y, x + 14, y + 14), fill=255)
            else:
                d.line((x, y, x + 14, y + 14), fill=255, width=3)
            buf = io.BytesIO()
            im.save(buf, "PNG")
            z.writestr(f"img/{label}_{i:03d}.png", buf.getvalue())
            rows.append((f"img/{label}_{i:03d}.png", name))
    s = io.StringIO()
    csv.writer(s).writerows([("file", "label")] + rows)
    z.writestr("labels.csv", s.getvalue())
PY
frugal train --data "$t/data.zip" --run "$t/run" --model cnn --epochs 3 --batch-size 16 --workers 1 --val-split 0.3 \
  2>"$t/train.log" || die "training the tiny run" "$t/train.log"

expect_exit "report writes RUN/report.html" 0 frugal report "$t/run"
check "stdout names the page" '[ "$(cat "$t/out")" == "$t/run/report.html" ] && [ -s "$t/run/report.html" ]'
expect_exit "report -o FILE" 0 frugal report "$t/run" -o "$out/report.html"
expect_exit "report -o FOLDER is refused" 2 frugal report "$t/run" -o "$out"
expect_msg "...asking for a file name" "a file name for the page"
mkdir -p "$t/notrun"
expect_exit "report of a folder that is not a run" 3 frugal report "$t/notrun"
check "the page is under 2 MB" '[ "$(stat -c %s "$out/report.html")" -lt 2000000 ]'
check "no http(s) URL in the page" '! grep -qiE "https?://" "$out/report.html"'
check "a CSP that allows no request" 'grep -qF "default-src '"'"'none'"'"'" "$out/report.html"'

"$py" - "$out/report.html" "$out/screenshot.png" <<'PY' >"$t/browser.log" 2>&1
import json, sys
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

page, shot = sys.argv[1], sys.argv[2]
o = Options()
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"]:
    o.add_argument(a)
o.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
try:
    url = "file://" + page
    d.get(url)
    try:
        d.switch_to.alert
        raise SystemExit("an alert opened")
    except NoAlertPresentException:
        pass
    errors = [e for e in d.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert not errors, errors
    requests = []
    for e in d.get_log("performance"):
        m = json.loads(e["message"])["message"]
        if m["method"] == "Network.requestWillBeSent":
            requests.append(m["params"]["request"]["url"])
    others = [u for u in requests if u != url and not u.startswith("data:")]
    assert not others, others
    assert d.execute_script("return document.scripts.length") == 0
    for id in ["chart-loss", "chart-accuracy", "chart-lr", "confusion-normalised", "confusion-raw", "per-class-table"]:
        assert d.find_elements(By.ID, id), id
    assert d.find_elements(By.CSS_SELECTOR, "#chart-loss polyline.series"), "no loss curve"
    assert d.find_elements(By.CSS_SELECTOR, "#confusion-raw path"), "no cells in the raw matrix"
    thumbs = d.find_elements(By.CSS_SELECTOR, "img.thumb")
    assert thumbs, "no thumbnails"
    assert all(d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", t) for t in thumbs)
    text = d.find_element(By.TAG_NAME, "body").text
    assert "<script>alert(1)</script>" in text, "the crafted class name is not shown as text"
    h = d.execute_script("return document.body.scrollHeight")
    d.set_window_size(1400, min(h + 50, 8000))
    d.save_screenshot(shot)
    print(f"ok: {len(thumbs)} thumbnails; requests: the page itself and {len(requests) - 1} data: URIs")
finally:
    d.quit()
PY
check "the page in headless chromium: no error, no request, curves, matrices, thumbnails, name as text" '[ $? -eq 0 ]'
_show "$t/browser.log"
check "a screenshot is kept" '[ -s "$out/screenshot.png" ]'

# The run's data moved away (another session's disk): the page still comes, without the matrix.
mv "$t/data.zip" "$t/moved.zip"
expect_exit "report of a run whose data moved" 0 frugal report "$t/run" -o "$t/moved.html"
expect_msg "...says the validation data cannot be read" "give --data DATA for one"
check "...and the page has the curves but no matrix" \
  'grep -q "chart-loss" "$t/moved.html" && ! grep -q "confusion-raw" "$t/moved.html"'
expect_exit "report --data NEW_PLACE" 0 frugal report "$t/run" --data "$t/moved.zip" -o "$t/moved.html"
check "...has the matrix" 'grep -q "confusion-raw" "$t/moved.html"'
echo "page and screenshot: $out"
finish
