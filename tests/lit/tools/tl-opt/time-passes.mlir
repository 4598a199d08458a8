// `--time-passes` reports each pass's wall time once, in pipeline order, and the total, to
// stderr, laid out as mlir-opt's timing report; the IR still goes to stdout.
// RUN: %tl-opt %S/../../passes/shape-inference.mlir -p desugar-pipes,resolve-nml,shape-inference --time-passes 2>&1 >/dev/null | filecheck %s
// RUN: %tl-opt %S/../../passes/shape-inference.mlir -p shape-inference --time-passes 2>/dev/null | filecheck %s --check-prefix=IR

// CHECK:      ===-------------------------------------------------------------------------===
// CHECK-NEXT:                          ... Execution time report ...
// CHECK-NEXT: ===-------------------------------------------------------------------------===
// CHECK-NEXT:   Total Execution Time: {{[0-9]+\.[0-9][0-9][0-9][0-9]}} seconds
// CHECK-EMPTY:
// CHECK-NEXT:   ----Wall Time----  ----Name----
// CHECK-NEXT:   {{ +[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  desugar-pipes
// CHECK-NEXT:   {{ +[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  resolve-nml
// CHECK-NEXT:   {{ +[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  shape-inference
// CHECK-NEXT:   {{ +[0-9]+\.[0-9][0-9][0-9][0-9] \(100\.0%\)}}  Total
// CHECK-NOT:  {{.}}

// IR: nml.func @forward(%x: !nml.tensor<[B, 1, 8, 8], f32>) -> !nml.tensor<[B, 10], f32>
