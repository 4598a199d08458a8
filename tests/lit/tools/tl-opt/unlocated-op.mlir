// A diagnostic on an op of .mlir input is reported: an op without a `loc(...)` is located
// where it stands in the input (as mlir-opt does), and the diagnostic quotes that line;
// an op whose location is unknown is quoted as tl-opt prints it, its operands' types as
// shape inference refined them up to that op. Both exit 1.
// RUN: not %tl-opt %s -p shape-inference 2>&1 | filecheck %s
// RUN: sed -e 's|^\(      %4 = nml.apply.*\)$|\1 loc(unknown)|' %s > %t.mlir
// RUN: not %tl-opt %t.mlir -p shape-inference 2>&1 | filecheck %s --check-prefix=UNKNOWN

builtin.module {
  nml.model @Net {
    nml.layer @conv = "Conv2d" [1 : i64, 8 : i64, 3 : i64] {padding = 1 : i64}
    nml.layer @pool = "MaxPool2d" [2 : i64] {}
    nml.layer @fc = "Linear" [100 : i64, 10 : i64] {}
    nml.func @forward(%x : !nml.tensor<[B, 1, 8, 8], f32>) -> !nml.tensor<*, f32> attributes {arg_names = ["x"]} {
      %0 = nml.apply @conv(%x) : (!nml.tensor<[B, 1, 8, 8], f32>) -> !nml.tensor<*, f32>
      %1 = nml.relu %0 : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32>
      %2 = nml.apply @pool(%1) : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32>
      %3 = nml.flatten %2 from 1 to -1 : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32>
      %4 = nml.apply @fc(%3) : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32>
      nml.return %4 : !nml.tensor<*, f32>
    }
  }
}

// CHECK:      error[TL0201]: `fc` expects 100 input features, got 128
// CHECK-NEXT:   --> {{.*}}unlocated-op.mlir:19:7
// CHECK-NEXT:    |
// CHECK-NEXT: 19 |       %4 = nml.apply @fc(%3) : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32>
// CHECK-NEXT:    |       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ input is [B, 128]
// CHECK-NEXT:   ::: {{.*}}unlocated-op.mlir:13:5
// CHECK-NEXT: 13 |     nml.layer @fc = "Linear" [100 : i64, 10 : i64] {}
// CHECK-NEXT:    |     ------------------------------------------------- `fc` is declared here
// CHECK:        = help: change `fc` to `Linear(128, 10)`, or add a layer that maps 128 to 100
// CHECK-NEXT: aborting: 1 error

// UNKNOWN:      error[TL0201]: `fc` expects 100 input features, got 128
// UNKNOWN-NEXT:   --> an op without a source location, as tl-opt prints it
// UNKNOWN-NEXT:    |
// UNKNOWN-NEXT:  1 | %0 = nml.apply @fc(%1) : (!nml.tensor<[B, 128], f32>) -> !nml.tensor<*, f32>
// UNKNOWN-NEXT:    | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ input is [B, 128]
// UNKNOWN-NEXT:   ::: {{.*}}unlocated-op.mlir.tmp.mlir:13:5
// UNKNOWN:      aborting: 1 error
