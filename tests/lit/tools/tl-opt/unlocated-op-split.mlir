// With `--split-input-file`, an op without a `loc(...)` is located at its line in the
// whole file, not in its chunk.
// RUN: not %tl-opt %s --split-input-file -p shape-inference 2>&1 | filecheck %s

builtin.module {
}

// -----

builtin.module {
  nml.model @Net {
    nml.layer @fc = "Linear" [100 : i64, 10 : i64] {}
    nml.func @forward(%x : !nml.tensor<[B, 128], f32>) -> !nml.tensor<*, f32> attributes {arg_names = ["x"]} {
      %0 = nml.apply @fc(%x) : (!nml.tensor<[B, 128], f32>) -> !nml.tensor<*, f32>
      nml.return %0 : !nml.tensor<*, f32>
    }
  }
}

// CHECK:      error[TL0201]: `fc` expects 100 input features, got 128
// CHECK-NEXT:   --> {{.*}}unlocated-op-split.mlir:14:7
// CHECK-NEXT:    |
// CHECK-NEXT: 14 |       %0 = nml.apply @fc(%x) : (!nml.tensor<[B, 128], f32>) -> !nml.tensor<*, f32>
