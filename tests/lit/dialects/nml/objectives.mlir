// The ops of objectives and sampling (an objective runs a model it receives; random
// samples, a linspace, a running product, drawn categories, an integer-tensor index) in
// their custom form: print, re-parse, and print again generic and back.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  nml.func @ddpm(%net: !nml.tensor<*, f32>, %x: !nml.tensor<[B, 64], f32>, %y: !nml.tensor<[B], i64>) -> !nml.tensor<[], f32> attributes {arg_names = ["net", "x", "y"]} {
    %0 = nml.linspace 1.000000e-04 : f64 to 2.000000e-02 : f64 steps 1000 : !nml.tensor<[1000], f32>
    %abar = nml.cumprod %0 dim 0 : (!nml.tensor<[1000], f32>) -> !nml.tensor<[1000], f32>
    %1 = nml.dim %x 0 : (!nml.tensor<[B, 64], f32>) -> i64
    %t = nml.sample "integers" ["?"](%1) {low = 0 : i64, high = 1000 : i64} : (i64) -> !nml.tensor<[B], i64>
    %a = nml.index %abar ["?"](%t) : (!nml.tensor<[1000], f32>, !nml.tensor<[B], i64>) -> !nml.tensor<[B], f32>
    %z = nml.sample "normal" ["?", 64 : i64](%1) : (i64) -> !nml.tensor<[B, 64], f32>
    %u = nml.sample "uniform" [2 : i64, 3 : i64] : () -> !nml.tensor<[2, 3], f32>
    %k = nml.multinomial %u samples 2 replacement false : (!nml.tensor<[2, 3], f32>) -> !nml.tensor<[2, 2], i64>
    %m = nml.bernoulli %z : (!nml.tensor<[B, 64], f32>) -> !nml.tensor<[B, 64], f32>
    %r = nml.rand_like %m : (!nml.tensor<[B, 64], f32>) -> !nml.tensor<[B, 64], f32>
    %out = nml.model_call %net(%r, %t) : (!nml.tensor<*, f32>, !nml.tensor<[B, 64], f32>, !nml.tensor<[B], i64>) -> !nml.tensor<[B, 64], f32>
    %2 = nml.loss "mse" %out, %z reduction "mean" {} : (!nml.tensor<[B, 64], f32>, !nml.tensor<[B, 64], f32>) -> !nml.tensor<[], f32>
    nml.return %2 : !nml.tensor<[], f32>
  }
}

// CHECK:      nml.func @ddpm(%net: !nml.tensor<*, f32>, %x: !nml.tensor<[B, 64], f32>
// CHECK:        %{{.*}} = nml.linspace 1.000000e-04 : f64 to 2.000000e-02 : f64 steps 1000 : !nml.tensor<[1000], f32>
// CHECK-NEXT:   %abar = nml.cumprod %{{.*}} dim 0 : (!nml.tensor<[1000], f32>) -> !nml.tensor<[1000], f32>
// CHECK:        %t = nml.sample "integers" ["?"](%{{.*}}) {low = 0 : i64, high = 1000 : i64} : (i64) -> !nml.tensor<[B], i64>
// CHECK-NEXT:   %a = nml.index %abar ["?"](%t) : (!nml.tensor<[1000], f32>, !nml.tensor<[B], i64>) -> !nml.tensor<[B], f32>
// CHECK-NEXT:   %z = nml.sample "normal" ["?", 64 : i64](%{{.*}}) : (i64) -> !nml.tensor<[B, 64], f32>
// CHECK-NEXT:   %u = nml.sample "uniform" [2 : i64, 3 : i64] : () -> !nml.tensor<[2, 3], f32>
// CHECK-NEXT:   %k = nml.multinomial %u samples 2 replacement false : (!nml.tensor<[2, 3], f32>) -> !nml.tensor<[2, 2], i64>
// CHECK-NEXT:   %m = nml.bernoulli %z
// CHECK-NEXT:   %r = nml.rand_like %m
// CHECK-NEXT:   %out = nml.model_call %net(%r, %t) : (!nml.tensor<*, f32>, !nml.tensor<[B, 64], f32>, !nml.tensor<[B], i64>) -> !nml.tensor<[B, 64], f32>
