#!/bin/sh
# Put this checkout's compiler, fuzzer and seed corpus under /work/main/.devrun/fuzz/src
# (the GPU machine copies /work/main's tree plus carried paths, and has no xDSL: the
# pure-Python dependencies go in .devrun/fuzz/lib, `pip install --no-deps --target`).
set -e
dest=${1:-/work/main/.devrun/fuzz}
rm -rf "$dest/src" && mkdir -p "$dest/src"
git archive HEAD tensorloom tests/fuzz tests/lit examples | tar -x -C "$dest/src"
git rev-parse HEAD > "$dest/src/COMMIT"
cat > "$dest/go.sh" <<'GO'
#!/bin/sh
# On the device, from the repository root: sh .devrun/fuzz/go.sh RUN.PY-ARGS...
cd .devrun/fuzz/src
python3 -c 'import sys, os; print(sys.version.split()[0], os.cpu_count(), "cpus")'
grep -m1 "model name" /proc/cpuinfo
PYTHONPATH=../lib:. OMP_NUM_THREADS=1 TRITON_INTERPRET=1 python3 tests/fuzz/run.py "$@"
GO
# xDSL and what it needs, pure Python (the device's interpreter may be another minor version).
rm -rf "$dest/lib"
python -m pip install -q --no-deps --target "$dest/lib" \
    "xdsl==$(python -c 'import importlib.metadata as m; print(m.version("xdsl"))')" \
    immutabledict ordered-set typing-extensions click
# xDSL's wheel also installs its benchmarks, docs and tests at the top level: 16 MB the
# device need not copy.
rm -rf "$dest/lib/benchmarks" "$dest/lib/docs" "$dest/lib/tests" "$dest/lib/bin" \
    "$dest/lib/scripts" "$dest/lib/typings" "$dest/lib/__pycache__"
