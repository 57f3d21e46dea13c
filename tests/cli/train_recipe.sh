#!/usr/bin/env bash
# --recipe (issue 45): a time budget picks the recipe by the epochs its plan buys, says which in one
# line and in config.json, and a resume goes on with it; named recipes set their options, options
# given beside them win; without a budget auto is the default recipe (crop and flip: what frugal
# trained with before). With the light recipe the weights' average is what the checkpoints hold as
# weights (the trained ones beside them), and validation flips at test time.
# Data: zips of generated 28x28 PNGs (Python, PIL).
source "$(dirname "$0")/lib/common.sh"
needs_commands frugal frugal-torch
needs_python PIL safetensors torch
keep_going
cd "$t"
make_shapes_zip many.zip 100   # 300 images: a 14 s budget buys a few epochs (light)
make_shapes_zip few.zip 4      # 12 images: the same budget buys hundreds of epochs (strong)
common=(--model cnn --batch-size 8 --device cpu --workers 1 --seed 5)
key() { "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1/config.json" "$2"; }

# 1. A budget of a few epochs: light. Cut by a deadline first, then resumed by the same command.
expect_exit "a budgeted run cut by its deadline" 75 frugal train --data many.zip "${common[@]}" --time-budget 14s \
  --deadline 7s --run light
expect_msg "...choosing the light recipe for its epochs" "recipe: light (auto: the time budget buys"
check "config.json records the recipe and its options" \
  '[ "$(key light recipe)" = light ] && [ "$(key light ema)" = 0.999 ] && [ "$(key light tta)" = flip ] && [ "$(key light label_smoothing)" = 0.1 ]'
"$py" - light > "$t/ckpt.txt" 2>&1 <<'PY'
import glob, sys
from safetensors.torch import load_file
f = sorted(glob.glob(f"{sys.argv[1]}/ckpt-*.safetensors"))[-1]
t = load_file(f)
trained = [k for k in t if k.startswith("frugal.trained.")]
assert trained and "fc.weight" in t, sorted(t)[:8]
assert not bool((t["fc.weight"] == t["frugal.trained.fc.weight"]).all()), "the average equals the weights"
print(f"{len(trained)} trained tensors beside the average")
PY
check "...and its checkpoint holds the average as weights, the trained weights beside" '[ $? -eq 0 ]'
expect_exit "the same command resumes it" 0 frugal train --data many.zip "${common[@]}" --time-budget 14s --run light
expect_msg "...from its checkpoint" "resuming from"
expect_msg "...going on with the run's recipe" "recipe: light (the run's own"
expect_no_msg "...without choosing again" "recipe: light (auto"
expect_exit "a resume with another recipe is refused" 2 frugal train --data many.zip "${common[@]}" --time-budget 14s \
  --recipe strong --run light
expect_msg "...naming it" "recipe"

expect_exit "eval --tta flip" 0 frugal eval light --data many.zip --json --tta flip
cp "$t/out" flip.json
expect_exit "eval without it" 0 frugal eval light --data many.zip --json
check "...scores otherwise: each image's logits averaged with its mirror's" \
  "\"\$py\" -c 'import json,sys; a, b = (json.load(open(f)) for f in sys.argv[1:]); assert a[\"loss\"] != b[\"loss\"]' flip.json '$t/out'"
expect_exit "eval --tta with another value is refused" 2 frugal eval light --data many.zip --tta rotate

# 2. The same budget over a dozen images buys hundreds of epochs: strong.
expect_exit "a budget of many epochs" 0 frugal train --data few.zip "${common[@]}" --time-budget 10s --run strong
expect_msg "...chooses the strong recipe" "recipe: strong (auto: the time budget buys"
check "config.json records strong's options" \
  '[ "$(key strong augment)" = trivial ] && [ "$(key strong mixup)" = 0.2 ] && [ "$(key strong cutmix)" = 1.0 ] && [ "$(key strong random_erasing)" = 0.25 ]'

# 3. Named recipes, and options given beside them.
expect_exit "--recipe light with --label-smoothing 0 and --ema 0.9" 0 frugal train --data few.zip "${common[@]}" \
  --epochs 1 --recipe light --label-smoothing 0 --ema 0.9 --run given
check "...keeps the options given" '[ "$(key given label_smoothing)" = 0.0 ] && [ "$(key given ema)" = 0.9 ] && [ "$(key given tta)" = flip ]'
expect_exit "no budget, no recipe" 0 frugal train --data few.zip "${common[@]}" --epochs 1 --run plain
check "...is the default recipe: crop and flip, nothing else" \
  '[ "$(key plain recipe)" = default ] && [ "$(key plain ema)" = 0.0 ] && [ "$(key plain augment)" = flip ] && [ "$(key plain tta)" = none ]'
expect_exit "--class-weights auto" 0 frugal train --data few.zip "${common[@]}" --epochs 1 --class-weights auto --run weighted
expect_msg "...says the weights (balanced data: all 1)" "class weights (balanced): class0 1, class1 1, class2 1"
printf 'class,weight\nclass0,1\nclass1,2\n' > w.csv
expect_exit "a weights file missing a class is refused" 3 frugal train --data few.zip "${common[@]}" --epochs 1 \
  --class-weights w.csv --run weighted2
expect_msg "...naming it" "class2"
expect_exit "--class-weights with --mixup is refused" 2 frugal train --data few.zip "${common[@]}" --epochs 1 \
  --class-weights auto --mixup 0.2 --run weighted3
expect_exit "--sampler balanced" 0 frugal train --data many.zip "${common[@]}" --epochs 1 --sampler balanced --run balanced
expect_msg "...says so" "sampler: balanced (each epoch draws 293 images with replacement"
check "...recorded in config.json" '[ "$(key balanced sampler)" = balanced ]'
expect_exit "--test-size 32" 0 frugal train --data few.zip "${common[@]}" --epochs 1 --test-size 32 --run tested
"$py" -c 'import json,sys; from safetensors import safe_open; f = safe_open(sys.argv[1], "pt"); assert f.metadata()["image_size"] == "32", f.metadata()["image_size"]' tested/best.safetensors
check "...the model records the test size" '[ $? -eq 0 ] && [ "$(key tested test_size)" = 32 ]'
expect_exit "...and eval reads images at it" 0 frugal eval tested --data few.zip
expect_exit "--lr-backbone 0.1 with --init" 0 frugal train --data few.zip "${common[@]}" --epochs 1 --init plain \
  --lr-backbone 0.1 --run finetune
check "...recorded in config.json" '[ "$(key finetune lr_backbone)" = 0.1 ]'
expect_exit "--lr-backbone without --init is refused" 2 frugal train --data few.zip "${common[@]}" --lr-backbone 0.1 --run x
expect_msg "...naming --init" "--init"
expect_exit "an unknown recipe is refused" 2 frugal train --data few.zip "${common[@]}" --recipe best --run x
expect_msg "...listing the recipes" "auto, none, default, light, strong"
expect_exit "--ema with --pipeline is refused" 2 frugal train --data few.zip "${common[@]}" --ema 0.99 --pipeline 2 --run x
finish
