// nml.loss (dialects/nml/losses.py) in its custom form: print, re-parse, and print
// again generic and back; both ways give the same text (losses-invalid.mlir: its verifier).
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s

builtin.module {
  nml.func @vae_loss(%out : !nml.tensor<[B, 10], f32>, %y : !nml.tensor<[B], i64>) -> !nml.tensor<[], f32> attributes {arg_names = ["out", "y"]} {
    %0 = nml.loss "cross_entropy" %out, %y reduction "mean" {label_smoothing = 0.1 : f64} : (!nml.tensor<[B, 10], f32>, !nml.tensor<[B], i64>) -> !nml.tensor<[], f32>
    %1 = nml.loss "mse" %out, %out reduction "none" {} : (!nml.tensor<[B, 10], f32>, !nml.tensor<[B, 10], f32>) -> !nml.tensor<[B, 10], f32>
    nml.return %0 : !nml.tensor<[], f32>
  }
}

// CHECK: nml.func @vae_loss(%out: !nml.tensor<[B, 10], f32>, %y: !nml.tensor<[B], i64>) -> !nml.tensor<[], f32> attributes {arg_names = ["out", "y"]} {
// CHECK-NEXT: %0 = nml.loss "cross_entropy" %out, %y reduction "mean" {label_smoothing = 1.000000e-01 : f64} : (!nml.tensor<[B, 10], f32>, !nml.tensor<[B], i64>) -> !nml.tensor<[], f32>
// CHECK-NEXT: %1 = nml.loss "mse" %out, %out reduction "none" {} : (!nml.tensor<[B, 10], f32>, !nml.tensor<[B, 10], f32>) -> !nml.tensor<[B, 10], f32>
// CHECK-NEXT: nml.return %0 : !nml.tensor<[], f32>

