// The ops of tensorloom/dialects/nml/tensor_ops.py (cumsum, norm, pad, narrow, cast, argmax,
// max/min, topk (k a constant or computed), one_hot, gather, scatter, index_add, nonzero) in
// their custom form, as
// `tlc compile --emit nml` prints them: print, re-parse, and print again generic and back.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  nml.model @M from "/tmp/vf/r.tl" {
    nml.func @forward(%x: !nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32> attributes {arg_names = ["x"]} {
      %0 = nml.cumsum %x dim 1 : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %1 = nml.cumprod %x dim 0 : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %a = nml.add %0, %1 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %n = nml.norm %x p 1.000000e+00 dims [-1 : i64] keepdim : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 1], f32>
      %2 = nml.dim %x 1 : (!nml.tensor<[B, 8], f32>) -> i64
      %3 = nml.constant 7 : i64
      %4 = nml.sub %2, %3 : (i64, i64) -> i64
      %p = nml.pad %x pads [1 : i64, "?"](%4) mode "constant" : (!nml.tensor<[B, 8], f32>, i64) -> !nml.tensor<[B, 10], f32>
      %5 = nml.dim %x 0 : (!nml.tensor<[B, 8], f32>) -> i64
      %6 = nml.dim %x 0 : (!nml.tensor<[B, 8], f32>) -> i64
      %7 = nml.sub %5, %6 : (i64, i64) -> i64
      %q = nml.narrow %x dim 1 start "?" length 4(%7) : (!nml.tensor<[B, 8], f32>, i64) -> !nml.tensor<[B, 4], f32>
      %8 = nml.max %x dim 1 keepdim : (!nml.tensor<[B, 8], f32>) -> !nml.tuple<[!nml.tensor<[B, 1], f32>, !nml.tensor<[B, 1], i64>]>
      %v = nml.tuple_get %8 0 : i64 : (!nml.tuple<[!nml.tensor<[B, 1], f32>, !nml.tensor<[B, 1], i64>]>) -> !nml.tensor<[B, 1], f32>
      %i = nml.tuple_get %8 1 : i64 : (!nml.tuple<[!nml.tensor<[B, 1], f32>, !nml.tensor<[B, 1], i64>]>) -> !nml.tensor<[B, 1], i64>
      %9 = nml.min %x dim 0 : (!nml.tensor<[B, 8], f32>) -> !nml.tuple<[!nml.tensor<[8], f32>, !nml.tensor<[8], i64>]>
      %mv = nml.tuple_get %9 0 : i64 : (!nml.tuple<[!nml.tensor<[8], f32>, !nml.tensor<[8], i64>]>) -> !nml.tensor<[8], f32>
      %mi = nml.tuple_get %9 1 : i64 : (!nml.tuple<[!nml.tensor<[8], f32>, !nml.tensor<[8], i64>]>) -> !nml.tensor<[8], i64>
      %10 = nml.topk %x k 2 : i64 dim -1 smallest : (!nml.tensor<[B, 8], f32>) -> !nml.tuple<[!nml.tensor<[B, 2], f32>, !nml.tensor<[B, 2], i64>]>
      %tv = nml.tuple_get %10 0 : i64 : (!nml.tuple<[!nml.tensor<[B, 2], f32>, !nml.tensor<[B, 2], i64>]>) -> !nml.tensor<[B, 2], f32>
      %ti = nml.tuple_get %10 1 : i64 : (!nml.tuple<[!nml.tensor<[B, 2], f32>, !nml.tensor<[B, 2], i64>]>) -> !nml.tensor<[B, 2], i64>
      %g = nml.gather %x, %ti dim 1 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 2], i64>) -> !nml.tensor<[B, 2], f32>
      %11 = nml.argmax %x dim 1 : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B], i64>
      %12 = nml.one_hot %11 classes 8 : (!nml.tensor<[B], i64>) -> !nml.tensor<[B, 8], i64>
      %13 = nml.cast %12 to "f32" : (!nml.tensor<[B, 8], i64>) -> !nml.tensor<[B, 8], f32>
      %14 = nml.argmin %x : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[], i64>
      %15 = nml.cast %14 to "f32" : (!nml.tensor<[], i64>) -> !nml.tensor<[], f32>
      %oh = nml.add %13, %15 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[], f32>) -> !nml.tensor<[B, 8], f32>
      %16 = nml.constant 0.000000e+00 : f64
      %17 = nml.scatter %x, %ti, %16 dim 1 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 2], i64>, f64) -> !nml.tensor<[B, 8], f32>
      %18 = nml.scatter_add %x, %ti, %tv dim 1 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 2], i64>, !nml.tensor<[B, 2], f32>) -> !nml.tensor<[B, 8], f32>
      %19 = nml.add %17, %18 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %20 = nml.argmax %x dim 0 : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[8], i64>
      %21 = nml.index %x [#nml.slice<#nml.none, 8 : i64, #nml.none>] : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[?, 8], f32>
      %22 = nml.index_add %x, %20, %21 dim 0 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[8], i64>, !nml.tensor<[?, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %s = nml.add %19, %22 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %23 = nml.cast %x to "i64" : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], i64>
      %24 = nml.cast %23 to "f16" : (!nml.tensor<[B, 8], i64>) -> !nml.tensor<[B, 8], f16>
      %25 = nml.cast %24 to "bf16" : (!nml.tensor<[B, 8], f16>) -> !nml.tensor<[B, 8], bf16>
      %26 = nml.cast %25 to "i1" : (!nml.tensor<[B, 8], bf16>) -> !nml.tensor<[B, 8], i1>
      %l = nml.cast %26 to "f32" : (!nml.tensor<[B, 8], i1>) -> !nml.tensor<[B, 8], f32>
      %nz = nml.nonzero %26 : (!nml.tensor<[B, 8], i1>) -> !nml.tuple<[!nml.tensor<[nnz_3_9], i64>, !nml.tensor<[nnz_3_9], i64>]>
      %tk = nml.topk %x k "?" dim 1 (%3) : (!nml.tensor<[B, 8], f32>, i64) -> !nml.tuple<[!nml.tensor<[B, 7], f32>, !nml.tensor<[B, 7], i64>]>
      %27 = nml.add %a, %n : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 1], f32>) -> !nml.tensor<[B, 8], f32>
      %28 = nml.index %p [":", #nml.slice<1 : i64, 9 : i64, #nml.none>] : (!nml.tensor<[B, 10], f32>) -> !nml.tensor<[B, 8], f32>
      %29 = nml.add %27, %28 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %30 = nml.add %29, %s : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %31 = nml.add %30, %l : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %32 = nml.add %31, %oh : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
      %33 = nml.add %32, %v : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 1], f32>) -> !nml.tensor<[B, 8], f32>
      nml.return %33 : !nml.tensor<[B, 8], f32>
    }
  }
}

// CHECK: %0 = nml.cumsum %x dim 1 : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
// CHECK: %1 = nml.cumprod %x dim 0 : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
// CHECK: %n = nml.norm %x p 1.000000e+00 dims [-1 : i64] keepdim : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 1], f32>
// CHECK: %p = nml.pad %x pads [1 : i64, "?"](%4) mode "constant" : (!nml.tensor<[B, 8], f32>, i64) -> !nml.tensor<[B, 10], f32>
// CHECK: %q = nml.narrow %x dim 1 start "?" length 4(%7) : (!nml.tensor<[B, 8], f32>, i64) -> !nml.tensor<[B, 4], f32>
// CHECK: %8 = nml.max %x dim 1 keepdim : (!nml.tensor<[B, 8], f32>) -> !nml.tuple<[!nml.tensor<[B, 1], f32>, !nml.tensor<[B, 1], i64>]>
// CHECK: %9 = nml.min %x dim 0 : (!nml.tensor<[B, 8], f32>) -> !nml.tuple<[!nml.tensor<[8], f32>, !nml.tensor<[8], i64>]>
// CHECK: %10 = nml.topk %x k 2 : i64 dim -1 smallest : (!nml.tensor<[B, 8], f32>) -> !nml.tuple<[!nml.tensor<[B, 2], f32>, !nml.tensor<[B, 2], i64>]>
// CHECK: %g = nml.gather %x, %ti dim 1 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 2], i64>) -> !nml.tensor<[B, 2], f32>
// CHECK: %11 = nml.argmax %x dim 1 : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B], i64>
// CHECK: %12 = nml.one_hot %11 classes 8 : (!nml.tensor<[B], i64>) -> !nml.tensor<[B, 8], i64>
// CHECK: %13 = nml.cast %12 to "f32" : (!nml.tensor<[B, 8], i64>) -> !nml.tensor<[B, 8], f32>
// CHECK: %14 = nml.argmin %x : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[], i64>
// CHECK: %15 = nml.cast %14 to "f32" : (!nml.tensor<[], i64>) -> !nml.tensor<[], f32>
// CHECK: %17 = nml.scatter %x, %ti, %16 dim 1 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 2], i64>, f64) -> !nml.tensor<[B, 8], f32>
// CHECK: %18 = nml.scatter_add %x, %ti, %tv dim 1 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[B, 2], i64>, !nml.tensor<[B, 2], f32>) -> !nml.tensor<[B, 8], f32>
// CHECK: %20 = nml.argmax %x dim 0 : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[8], i64>
// CHECK: %22 = nml.index_add %x, %20, %21 dim 0 : (!nml.tensor<[B, 8], f32>, !nml.tensor<[8], i64>, !nml.tensor<[?, 8], f32>) -> !nml.tensor<[B, 8], f32>
// CHECK: %23 = nml.cast %x to "i64" : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], i64>
// CHECK: %24 = nml.cast %23 to "f16" : (!nml.tensor<[B, 8], i64>) -> !nml.tensor<[B, 8], f16>
// CHECK: %25 = nml.cast %24 to "bf16" : (!nml.tensor<[B, 8], f16>) -> !nml.tensor<[B, 8], bf16>
// CHECK: %26 = nml.cast %25 to "i1" : (!nml.tensor<[B, 8], bf16>) -> !nml.tensor<[B, 8], i1>
// CHECK: %l = nml.cast %26 to "f32" : (!nml.tensor<[B, 8], i1>) -> !nml.tensor<[B, 8], f32>
// CHECK: %nz = nml.nonzero %26 : (!nml.tensor<[B, 8], i1>) -> !nml.tuple<[!nml.tensor<[nnz_3_9], i64>, !nml.tensor<[nnz_3_9], i64>]>
// CHECK: %tk = nml.topk %x k "?" dim 1(%3) : (!nml.tensor<[B, 8], f32>, i64) -> !nml.tuple<[!nml.tensor<[B, 7], f32>, !nml.tensor<[B, 7], i64>]>
