#!/bin/sh
# Issue 18's GPU run in one device call: put what it needs under /work/main/.devrun/NAME.
#
#     sh bench/gpt2_device_bundle.sh /work/main/.devrun/gpt5     # here, from a worktree
#     run: sh .devrun/gpt5/go.sh   with carry [".devrun/gpt5"]   # the device call
#
# The device copies /work/main's checkout plus the carried paths and has no xDSL: this
# checkout's committed bench/ and tensorloom/ (the token corpus helper) travel, with the
# emitted GPT-2 scripts compiled here (bench/prepare_gpu.py) and the cut-cross-entropy
# wheel (pure Python; its Triton kernels need the GPU), installed there with
# `pip install --no-deps --target`. go.sh runs, in priority order (the suite's budget
# skips the last): the matmul/attention floor (bench/gpt2_ceiling.py), then
# bench/gpu_suite.py's GPT-2 rows: hand-written compile(default) with its kernel-time
# profile, the emitted compile(default) and TensorLoom-defaults scripts,
# max-autotune-no-cudagraphs (minutes of autotuning: up to 300 s) and the emitted script
# with `compile = "max-autotune"` (CUDA graphs too), Cut Cross-Entropy, the
# compiled clip + foreach step, B=32, B=8, a repeat of the baseline. Everything it writes is under $OUT (3 files).
# go_fp8.sh runs the FP8 rows instead (run 11): a bf16 reference, then torchao's float8
# training (the torchao wheel travels too) on the head alone, every block linear
# (tensorwise, rowwise), the MLPs alone, blocks and head, and the emitted script with
# `run_emitted.py --fp8`.
set -e
dest=${1:?usage: gpt2_device_bundle.sh /work/main/.devrun/NAME}
case "$dest" in /work/main/.devrun/?*) ;; *) echo "NAME must be under /work/main/.devrun/" >&2; exit 2 ;; esac
rm -rf "$dest" && mkdir -p "$dest/wheels"
python bench/prepare_gpu.py
git archive HEAD bench tensorloom | tar -x -C "$dest"
cp -r bench/generated "$dest/bench/"
git rev-parse HEAD > "$dest/COMMIT"
python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 -d "$dest/wheels" \
    cut-cross-entropy==25.1.1 torchao==0.18.0
cat > "$dest/go.sh" <<'GO'
#!/bin/sh
# On the device, from the repository root: sh .devrun/NAME/go.sh  (BUDGET_S: the suite's seconds)
cd "$(dirname "$0")"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    wheels/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
python3 bench/gpt2_ceiling.py --out "$OUT/gpt2_ceiling.json" > /dev/null
python3 bench/gpu_suite.py --budget-s "${BUDGET_S:-470}" --out "$OUT/gpt2.jsonl" \
    --only "gpt2/handwritten/bf16+compile(default)" --only "gpt2/tensorloom/bf16+compile(default)" \
    --only "gpt2/tensorloom/TensorLoom defaults" --only "Cut Cross" --only "compiled clip" \
    --only "gpt2/handwritten/batch" --only "max-autotune"  # hand-written and emitted
GO
cat > "$dest/go_fp8.sh" <<'GO'
#!/bin/sh
# On the device, from the repository root: sh .devrun/NAME/go_fp8.sh  (BUDGET_S: the suite's seconds)
cd "$(dirname "$0")"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    wheels/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, torchao; print('torchao', torchao.__version__, 'torch', torch.__version__)" \
    >> "$OUT/gpu.txt" 2>&1
python3 bench/gpu_suite.py --budget-s "${BUDGET_S:-400}" --out "$OUT/gpt2_fp8.jsonl" --only FP8
GO
du -sh "$dest"
