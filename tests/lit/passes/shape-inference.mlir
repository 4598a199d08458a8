// Shapes flow from the annotation through layers (catalogue rules) and builtins
// (each op's own rule); symbolic dims stay symbolic; the return type is set.
// RUN: %tl-opt %s -p shape-inference | filecheck %s

builtin.module {
  nml.model @Net {
    nml.layer @conv = "Conv2d" [1 : i64, 8 : i64, 3 : i64] {padding = 1 : i64}
    nml.layer @pool = "MaxPool2d" [2 : i64] {}
    nml.layer @fc = "Linear" [128 : i64, 10 : i64] {}
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

// CHECK:      nml.func @forward(%x: !nml.tensor<[B, 1, 8, 8], f32>) -> !nml.tensor<[B, 10], f32>
// CHECK-NEXT: %0 = nml.apply @conv(%x) : (!nml.tensor<[B, 1, 8, 8], f32>) -> !nml.tensor<[B, 8, 8, 8], f32>
// CHECK-NEXT: %1 = nml.relu %0 : (!nml.tensor<[B, 8, 8, 8], f32>) -> !nml.tensor<[B, 8, 8, 8], f32>
// CHECK-NEXT: %2 = nml.apply @pool(%1) : (!nml.tensor<[B, 8, 8, 8], f32>) -> !nml.tensor<[B, 8, 4, 4], f32>
// CHECK-NEXT: %3 = nml.flatten %2 from 1 to -1 : (!nml.tensor<[B, 8, 4, 4], f32>) -> !nml.tensor<[B, 128], f32>
// CHECK-NEXT: %4 = nml.apply @fc(%3) : (!nml.tensor<[B, 128], f32>) -> !nml.tensor<[B, 10], f32>
// CHECK-NEXT: nml.return %4 : !nml.tensor<[B, 10], f32>
