#!/usr/bin/env bash
# Special files where frugal expects its own: each file frugal reads or appends in a run folder
# (best.safetensors, the newest checkpoint, config.json, metrics.jsonl, the TensorBoard events) as a
# FIFO, as a link to /dev/zero and as a link to a file out of the folder. train (resuming), eval,
# predict and export never hang (each runs under a 20 s limit) nor grow without bound (peak RSS
# checked), the file outside is unchanged, and a refusal is exit 3 naming the file. A resume skips
# a checkpoint that is not a regular file (noted) and continues from the one before.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch

max_rss_mb=1500  # frugal-torch's own peak is a few hundred MB here; /dev/zero read whole passes it in seconds
make_two_class_zip "$t/data.zip" 8
train_args=(--data "$t/data.zip" --model cnn --epochs 2 --batch-size 8 --val-split 0.25 --workers 1 --device cpu)
frugal train "${train_args[@]}" --run "$t/good" 2>"$t/train.log" || die "the first training" "$t/train.log"
newest=$(cd "$t/good" && ls ckpt-*.safetensors | tail -1)
events=$(cd "$t/good" && ls events.out.tfevents.*)
[[ -n $newest && -n $events && -f $t/good/best.safetensors ]] || die "the run folder lacks a file: $(ls "$t/good")"

# bounded NAME WANT CMD...: expect_exit under a 20 s limit (a hang is exit 124) that also fails
# when the command's peak memory passes max_rss_mb.
bounded() {
  local name=$1 want=$2 result rc rss
  shift 2
  result=$(OUT="$t/out" ERR="$t/err" "$py" - "$@" <<'PY'
import os, resource, subprocess, sys
try:
    with open(os.environ["OUT"], "wb") as o, open(os.environ["ERR"], "wb") as e:
        rc = subprocess.run(sys.argv[1:], stdout=o, stderr=e, timeout=20).returncode
except subprocess.TimeoutExpired:
    rc = 124  # killed and reaped: its peak memory is counted below
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
  )
  read -r rc rss <<<"$result"
  if [[ $rc == "$want" ]] && ((rss < max_rss_mb)); then
    ok "$name"
  else
    bad "$name: exit $rc (expected $want), peak ${rss} MB" "$t/err"
  fi
}

for file in best.safetensors "$newest" config.json metrics.jsonl "$events"; do
  for as in fifo zero out; do
    run="$t/case"
    rm -rf "$run" "$t/outside"
    cp -a "$t/good" "$run"
    mkdir "$t/outside"
    cp "$run/$file" "$t/outside/$file"
    rm "$run/$file"
    case $as in
      fifo) mkfifo "$run/$file" && what="$file as a FIFO" ;;
      zero) ln -s /dev/zero "$run/$file" && what="$file as a link to /dev/zero" ;;
      out) ln -s "$t/outside/$file" "$run/$file" && what="$file as a link out of the folder" ;;
    esac
    outside=$(sha256sum <"$t/outside/$file")

    if [[ $file == "$newest" ]]; then
      bounded "train resumes past $what" 0 frugal train "${train_args[@]}" --run "$run"
      expect_msg "...noting that it skips it" "skipping checkpoint $run/$file"
    else
      bounded "train refuses $what (exit 3)" 3 frugal train "${train_args[@]}" --run "$run"
      expect_msg "...naming it" "$run/$file: expected a regular file"
    fi
    if [[ $file == best.safetensors ]]; then
      bounded "eval refuses $what (exit 3)" 3 frugal eval "$run" --data "$t/data.zip"
      expect_msg "...naming it" "$run/$file: expected a regular file"
      bounded "predict refuses $what (exit 3)" 3 frugal predict "$run" "$t/data.zip:bright/000.png"
      expect_msg "...naming it" "$run/$file: expected a regular file"
      bounded "export refuses $what (exit 3)" 3 frugal export "$run" --format onnx -o "$t/out.onnx"
      expect_msg "...naming it" "$run/$file: expected a regular file"
      check "...exporting nothing" '[ ! -e "$t/out.onnx" ]'
    elif [[ $file != "$newest" ]]; then
      # eval reads only best.safetensors: the other files are never opened.
      bounded "eval of the run folder with $what" 0 frugal eval "$run" --data "$t/data.zip"
    fi
    check "...the file outside unchanged" '[ "$(sha256sum <"$t/outside/$file")" == "$outside" ]'
  done
done
finish
