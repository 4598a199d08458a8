#!/bin/sh
# The speedrun's H200 runs (issue 34): put what they need under /work/main/.devrun/NAME.
#
#     sh bench/speedrun/device_bundle.sh /work/main/.devrun/speedrun    # here, from a worktree
#     run: sh .devrun/speedrun/go.sh         carry [".devrun/speedrun"] # call 1, about 9 minutes
#     run: sh .devrun/speedrun/go_check.sh   carry [".devrun/speedrun"] # call 2, about 4 minutes
#     run: ONLY=none,muon,rotary,qk_norm sh .devrun/speedrun/go_ablate.sh  carry [...]  # calls 3-5
#
# The device has torch but no xDSL, so examples/gpt_speedrun.tl is compiled here (its program
# and runtime module travel), with `tlc info`'s predicted peak (bytes) for the run to set
# beside the measured one: the eager `peak`, since a block of `step` lines compiles the model
# and computes the loss outside it (docs/info.md: such a script's compiled peak is eager's). This commit's bench/ travels too (git archive). On the
# device the corpus is prepared from that machine's Python standard library (meta.json records
# its version and hashes). Everything the runs write is under $OUT:
#   go.sh         baseline.jsonl, tensorloom.jsonl, summary.json (L, times to L, ratio, peak)
#   go_check.sh   handwritten.jsonl, tensorloom.jsonl, tokens_check.json (emitted / hand-written)
#   go_ablate.sh  ablation/NAME.jsonl per run, ablation/ablation.json and its markdown table
# Back here: tlc plot OUT/baseline.jsonl OUT/tensorloom.jsonl --x wall_s -o curves.png
set -e
dest=${1:?usage: device_bundle.sh /work/main/.devrun/NAME}
case "$dest" in /work/main/.devrun/?*) ;; *) echo "NAME must be under /work/main/.devrun/" >&2; exit 2 ;; esac
rm -rf "$dest" && mkdir -p "$dest/program"
git archive HEAD bench | tar -x -C "$dest"
git rev-parse HEAD > "$dest/COMMIT"
python -m tensorloom.tools.tlc compile examples/gpt_speedrun.tl -o "$dest/program/gpt_speedrun.py"
python -m tensorloom.tools.tlc info examples/gpt_speedrun.tl -D T=1024 --json 2>/dev/null \
    | python -c 'import json, sys; m = json.load(sys.stdin)["models"][0]["memory"]; print(m["peak"], m["compiled_peak"])' \
    > "$dest/PREDICTED_PEAK"   # eager, then with the loss fused: the run compares the first
cat > "$dest/go.sh" <<'GO'
#!/bin/sh
# On the device, from the repository root: sh .devrun/NAME/go.sh  (BUDGET_S: each run's seconds)
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
cp COMMIT "$OUT/"
python3 bench/speedrun/runner.py --program program/gpt_speedrun.py --out "$OUT" \
    --budget-s "${BUDGET_S:-210}" --predicted "$(cut -d' ' -f1 PREDICTED_PEAK)"
cp PREDICTED_PEAK "$OUT/"
GO
cat > "$dest/go_check.sh" <<'GO'
#!/bin/sh
# On the device: the emitted program's tokens/s against bench/handwritten/speedrun_gpt.py's
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
cp COMMIT "$OUT/"
python3 bench/speedrun/runner.py --program program/gpt_speedrun.py --out "$OUT" \
    --tokens-check --steps "${STEPS:-140}"
GO
cat > "$dest/go_ablate.sh" <<'GO'
#!/bin/sh
# On the device: ONLY=none,muon,... (runs of bench/speedrun/ablate.py), ABLATE_S seconds each
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
cp COMMIT "$OUT/"
python3 bench/speedrun/ablate.py --out "$OUT/ablation" --budget-s "${ABLATE_S:-120}" \
    --only "${ONLY:-none,muon,rotary,qk_norm}"
GO
du -sh "$dest"
