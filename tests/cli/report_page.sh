#!/usr/bin/env bash
# frugal report's page in a real headless browser (Debian's chromium through Selenium): a tiny run
# whose one class is named <script>alert(1)</script> (labels.csv inside the data), its report
# loaded from file://: no console error, no request but the page itself, no script and no alert,
# the curves (the learning rate and images/s at every point of the training curve, a time
# budget's plan, the first session's cut by its deadline), both confusion matrices, the worst
# images' thumbnails, the disk use against --disk-budget and the environment in the DOM, the
# crafted name shown as text. The page and a screenshot are kept in build/test-output/report_page/.
source "$(dirname "$0")/lib/common.sh"
needs_python PIL selenium tensorboard
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
# Two sessions of a --time-budget run with a --disk-budget: the first cut by its --deadline (exit
# 75), the second resumed to the budget's end. The page shows the plan, images/s, the cut, the
# disk use against the budget. The recipe is the default one (the budget would pick strong for its
# hundred epochs, whose mixed images have no training accuracy to draw).
train_run() {
  frugal train --data "$t/data.zip" --run "$t/run" --model cnn --time-budget 20s --disk-budget 50MB --batch-size 16 \
    --workers 1 --val-split 0.3 --recipe default "$@"
}
train_run --deadline 10s 2>"$t/train.log"
rc=$?
[ $rc -eq 75 ] || die "the first session, cut by its deadline (exit $rc, want 75)" "$t/train.log"
train_run 2>>"$t/train.log" || die "training the tiny run" "$t/train.log"

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

"$py" - "$out/report.html" "$out/screenshot.png" "$t/run" <<'PY' >"$t/browser.log" 2>&1
import glob, json, sys
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

page, shot = sys.argv[1], sys.argv[2]
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
# The training curve's steps: metrics.jsonl's "train_points" and each session's events (those
# after a session's last epoch record are there only).
records = [json.loads(l) for l in open(sys.argv[3] + "/metrics.jsonl")]
fine_steps = {s for r in records for s in r.get("train_points", {}).get("step", [])}
for f in glob.glob(sys.argv[3] + "/events.out.tfevents.*"):
    acc = EventAccumulator(f, size_guidance={"scalars": 0})
    acc.Reload()
    if "train/lr" in acc.Tags()["scalars"]:
        fine_steps |= {e.step for e in acc.Scalars("train/lr")}
epochs = [r for r in records if "epoch" in r]
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
    for id in ["chart-loss", "chart-accuracy", "chart-lr", "chart-speed", "chart-plan", "confusion-normalised",
               "confusion-raw", "per-class-table", "disk", "environment", "sessions"]:
        assert d.find_elements(By.ID, id), id
    # Training accuracy beside validation's: the run counted it (metrics.jsonl's train_accuracy).
    assert not d.find_elements(By.ID, "no-train-accuracy"), "the page says no training accuracy"
    legend = d.find_element(By.CSS_SELECTOR, "#chart-accuracy .legend").text
    assert "train accuracy (epoch mean)" in legend and "validation accuracy" in legend, legend
    assert len(d.find_elements(By.CSS_SELECTOR, "#chart-accuracy polyline.series")) >= 2, "one accuracy line"
    assert all(0 <= r["train_accuracy"] <= 1 for r in epochs), [r.get("train_accuracy") for r in epochs]
    assert d.find_elements(By.CSS_SELECTOR, "#chart-loss polyline.series"), "no loss curve"
    def points(css):
        return d.execute_script(
            "const p = document.querySelector(arguments[0]); "
            "return p ? p.getAttribute('points').trim().split(/\\s+/).length : 0", css)
    # The fine curve, a point per training-curve step, not one per epoch.
    for chart in ["#chart-lr", "#chart-speed"]:
        n = points(chart + " polyline.series")
        assert n == len(fine_steps) > len(epochs), (chart, n, len(fine_steps), len(epochs))
    assert points("#chart-plan polyline.series") > 1, "no plan"
    cuts = d.execute_script(
        "return [...document.querySelectorAll('#chart-loss line.mark.cut title')].map(t => t.textContent)")
    assert any("session 1 cut at step" in c and c.endswith(": deadline") for c in cuts), cuts
    ended = [e.text for e in d.find_elements(By.CSS_SELECTOR, "#sessions td.ended")]
    assert len(ended) == 2 and ended[0].endswith(": deadline") and ended[1].startswith("done at step"), ended
    disk = d.find_element(By.ID, "disk").text
    assert "of a budget of" in disk and "none set" not in disk, disk
    env = d.find_element(By.ID, "environment").text
    assert "LibTorch" in env and "CPU" in env, env
    assert d.find_elements(By.CSS_SELECTOR, "#confusion-raw path"), "no cells in the raw matrix"
    thumbs = d.find_elements(By.CSS_SELECTOR, "img.thumb")
    assert thumbs, "no thumbnails"
    assert all(d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", t) for t in thumbs)
    text = d.find_element(By.TAG_NAME, "body").text
    assert "<script>alert(1)</script>" in text, "the crafted class name is not shown as text"
    h = d.execute_script("return document.body.scrollHeight")
    d.set_window_size(1400, min(h + 50, 8000))
    d.save_screenshot(shot)
    print(f"ok: {len(thumbs)} thumbnails; requests: the page itself and {len(requests) - 1} data: URIs; "
          f"{len(fine_steps)} curve points over {len(epochs)} epochs; cuts {cuts}; sessions {ended}; {disk}")
finally:
    d.quit()
PY
check "the page in headless chromium: no error, no request, curves (fine lr, images/s, plan, the deadline's cut), matrices, thumbnails, disk, environment, name as text" '[ $? -eq 0 ]'
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
