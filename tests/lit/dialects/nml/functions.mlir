// The function ops (the catalogue of tensorloom/passes/resolve_builtins.py) in their
// custom form, as `tlc compile --emit nml` prints them for d.tl: print, re-parse, and
// print again generic and back; both ways give the same text.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  nml.model @M from "d.tl" {
    nml.func @forward(%x: !nml.tensor<[B, 4, 8], f32>, %q: !nml.tensor<[B, 2, 4, 8], f32>, %m: !nml.tensor<[4, 4], f32>) -> !nml.tensor<[B, 4, 8], f32> attributes {arg_names = ["x", "q", "m"]} {
      %0 = nml.exp %x : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %1 = nml.gelu %0 approximate "tanh" : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %2 = nml.clamp %1 min 0.000000e+00 max 6.000000e+00 : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %a = nml.detach %2 : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %3 = nml.amax %x dims [-1 : i64] keepdim : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 1], f32>
      %4 = nml.var %x dims [-1 : i64] correction 0 keepdim : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 1], f32>
      %b = nml.add %3, %4 : (!nml.tensor<[B, 4, 1], f32>, !nml.tensor<[B, 4, 1], f32>) -> !nml.tensor<[B, 4, 1], f32>
      %5 = nml.stack %x, %x dim 1 : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 2, 4, 8], f32>
      %6 = nml.split %5 equal sizes [4 : i64] dim -1 : (!nml.tensor<[B, 2, 4, 8], f32>) -> !nml.tuple<[!nml.tensor<[B, 2, 4, 4], f32>, !nml.tensor<[B, 2, 4, 4], f32>]>
      %7 = nml.index %6 [0 : i64] : (!nml.tuple<[!nml.tensor<[B, 2, 4, 4], f32>, !nml.tensor<[B, 2, 4, 4], f32>]>) -> !nml.tensor<[B, 2, 4, 4], f32>
      %8 = nml.chunk %7 2 dim 1 : (!nml.tensor<[B, 2, 4, 4], f32>) -> !nml.tuple<[!nml.tensor<[B, 1, 4, 4], f32>, !nml.tensor<[B, 1, 4, 4], f32>]>
      %s = nml.index %8 [1 : i64] : (!nml.tuple<[!nml.tensor<[B, 1, 4, 4], f32>, !nml.tensor<[B, 1, 4, 4], f32>]>) -> !nml.tensor<[B, 1, 4, 4], f32>
      %9 = nml.split %x sizes [2 : i64, 6 : i64] dim -1 : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tuple<[!nml.tensor<[B, 4, 2], f32>, !nml.tensor<[B, 4, 6], f32>]>
      %p = nml.index %9 [1 : i64] : (!nml.tuple<[!nml.tensor<[B, 4, 2], f32>, !nml.tensor<[B, 4, 6], f32>]>) -> !nml.tensor<[B, 4, 6], f32>
      %10 = nml.expand %b to [-1 : i64, -1 : i64, 8 : i64] : (!nml.tensor<[B, 4, 1], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %11 = nml.repeat %10 to [1 : i64, 1 : i64, 2 : i64] : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 16], f32>
      %12 = nml.unsqueeze %11 dim 0 : (!nml.tensor<[B, 4, 16], f32>) -> !nml.tensor<[1, B, 4, 16], f32>
      %e = nml.squeeze %12 dims [0 : i64] : (!nml.tensor<[1, B, 4, 16], f32>) -> !nml.tensor<[B, 4, 16], f32>
      %13 = nml.tril %m diagonal 1 : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
      %14 = nml.triu %m diagonal 0 : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
      %15 = nml.add %13, %14 : (!nml.tensor<[4, 4], f32>, !nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
      %16 = nml.t %m : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
      %17 = nml.add %15, %16 : (!nml.tensor<[4, 4], f32>, !nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
      %18 = nml.normalize %m p 2.000000e+00 dim 0 : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
      %t = nml.add %17, %18 : (!nml.tensor<[4, 4], f32>, !nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
      %19 = nml.einsum "bij,bkj->bik" %x, %x : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 4], f32>
      %20 = nml.constant 0.000000e+00 : f64
      %21 = nml.gt %m, %20 : (!nml.tensor<[4, 4], f32>, f64) -> !nml.tensor<[4, 4], i1>
      %22 = nml.constant 0.000000e+00 : f64
      %23 = nml.where %21, %m, %22 : (!nml.tensor<[4, 4], i1>, !nml.tensor<[4, 4], f32>, f64) -> !nml.tensor<[4, 4], f32>
      %24 = nml.constant 0.000000e+00 : f64
      %25 = nml.lt %m, %24 : (!nml.tensor<[4, 4], f32>, f64) -> !nml.tensor<[4, 4], i1>
      %26 = nml.constant 1.000000e+00 : f64
      %27 = nml.masked_fill %23, %25, %26 : (!nml.tensor<[4, 4], f32>, !nml.tensor<[4, 4], i1>, f64) -> !nml.tensor<[4, 4], f32>
      %k = nml.add %19, %27 : (!nml.tensor<[B, 4, 4], f32>, !nml.tensor<[4, 4], f32>) -> !nml.tensor<[B, 4, 4], f32>
      %o = nml.attention %q, %q, %q causal dropout 1.000000e-01 : (!nml.tensor<[B, 2, 4, 8], f32>, !nml.tensor<[B, 2, 4, 8], f32>, !nml.tensor<[B, 2, 4, 8], f32>) -> !nml.tensor<[B, 2, 4, 8], f32>
      %28 = nml.dim %x 1 : (!nml.tensor<[B, 4, 8], f32>) -> i64
      %r = nml.arange [0 : i64, "?", 1 : i64](%28) : (i64) -> !nml.tensor<[4], i64>
      %29 = nml.sum %s : (!nml.tensor<[B, 1, 4, 4], f32>) -> !nml.tensor<[], f32>
      %30 = nml.add %a, %29 : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %31 = nml.sum %p : (!nml.tensor<[B, 4, 6], f32>) -> !nml.tensor<[], f32>
      %32 = nml.add %30, %31 : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %33 = nml.amin %e : (!nml.tensor<[B, 4, 16], f32>) -> !nml.tensor<[], f32>
      %34 = nml.add %32, %33 : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %35 = nml.std %t : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[], f32>
      %36 = nml.add %34, %35 : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %37 = nml.sum %k : (!nml.tensor<[B, 4, 4], f32>) -> !nml.tensor<[], f32>
      %38 = nml.add %36, %37 : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %39 = nml.sum %o : (!nml.tensor<[B, 2, 4, 8], f32>) -> !nml.tensor<[], f32>
      %40 = nml.add %38, %39 : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[], f32>) -> !nml.tensor<[B, 4, 8], f32>
      %41 = nml.sum %r : (!nml.tensor<[4], i64>) -> !nml.tensor<[], i64>
      %42 = nml.add %40, %41 : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[], i64>) -> !nml.tensor<[B, 4, 8], f32>
      nml.return %42 : !nml.tensor<[B, 4, 8], f32>
    }
  }
}


// CHECK: %0 = nml.exp %x : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 8], f32>
// CHECK: %1 = nml.gelu %0 approximate "tanh" : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 8], f32>
// CHECK: %2 = nml.clamp %1 min 0.000000e+00 max 6.000000e+00 : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 8], f32>
// CHECK: %a = nml.detach %2 : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 8], f32>
// CHECK: %3 = nml.amax %x dims [-1 : i64] keepdim : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 1], f32>
// CHECK: %4 = nml.var %x dims [-1 : i64] correction 0 keepdim : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 1], f32>
// CHECK: %5 = nml.stack %x, %x dim 1 : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 2, 4, 8], f32>
// CHECK: %6 = nml.split %5 equal sizes [4 : i64] dim -1 : (!nml.tensor<[B, 2, 4, 8], f32>) -> !nml.tuple<[!nml.tensor<[B, 2, 4, 4], f32>, !nml.tensor<[B, 2, 4, 4], f32>]>
// CHECK: %7 = nml.index %6 [0 : i64] : (!nml.tuple<[!nml.tensor<[B, 2, 4, 4], f32>, !nml.tensor<[B, 2, 4, 4], f32>]>) -> !nml.tensor<[B, 2, 4, 4], f32>
// CHECK: %8 = nml.chunk %7 2 dim 1 : (!nml.tensor<[B, 2, 4, 4], f32>) -> !nml.tuple<[!nml.tensor<[B, 1, 4, 4], f32>, !nml.tensor<[B, 1, 4, 4], f32>]>
// CHECK: %s = nml.index %8 [1 : i64] : (!nml.tuple<[!nml.tensor<[B, 1, 4, 4], f32>, !nml.tensor<[B, 1, 4, 4], f32>]>) -> !nml.tensor<[B, 1, 4, 4], f32>
// CHECK: %9 = nml.split %x sizes [2 : i64, 6 : i64] dim -1 : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tuple<[!nml.tensor<[B, 4, 2], f32>, !nml.tensor<[B, 4, 6], f32>]>
// CHECK: %p = nml.index %9 [1 : i64] : (!nml.tuple<[!nml.tensor<[B, 4, 2], f32>, !nml.tensor<[B, 4, 6], f32>]>) -> !nml.tensor<[B, 4, 6], f32>
// CHECK: %10 = nml.expand %b to [-1 : i64, -1 : i64, 8 : i64] : (!nml.tensor<[B, 4, 1], f32>) -> !nml.tensor<[B, 4, 8], f32>
// CHECK: %11 = nml.repeat %10 to [1 : i64, 1 : i64, 2 : i64] : (!nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 16], f32>
// CHECK: %12 = nml.unsqueeze %11 dim 0 : (!nml.tensor<[B, 4, 16], f32>) -> !nml.tensor<[1, B, 4, 16], f32>
// CHECK: %e = nml.squeeze %12 dims [0 : i64] : (!nml.tensor<[1, B, 4, 16], f32>) -> !nml.tensor<[B, 4, 16], f32>
// CHECK: %13 = nml.tril %m diagonal 1 : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
// CHECK: %14 = nml.triu %m diagonal 0 : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
// CHECK: %16 = nml.t %m : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
// CHECK: %18 = nml.normalize %m p 2.000000e+00 dim 0 : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[4, 4], f32>
// CHECK: %19 = nml.einsum "bij,bkj->bik" %x, %x : (!nml.tensor<[B, 4, 8], f32>, !nml.tensor<[B, 4, 8], f32>) -> !nml.tensor<[B, 4, 4], f32>
// CHECK: %21 = nml.gt %m, %20 : (!nml.tensor<[4, 4], f32>, f64) -> !nml.tensor<[4, 4], i1>
// CHECK: %23 = nml.where %21, %m, %22 : (!nml.tensor<[4, 4], i1>, !nml.tensor<[4, 4], f32>, f64) -> !nml.tensor<[4, 4], f32>
// CHECK: %25 = nml.lt %m, %24 : (!nml.tensor<[4, 4], f32>, f64) -> !nml.tensor<[4, 4], i1>
// CHECK: %27 = nml.masked_fill %23, %25, %26 : (!nml.tensor<[4, 4], f32>, !nml.tensor<[4, 4], i1>, f64) -> !nml.tensor<[4, 4], f32>
// CHECK: %o = nml.attention %q, %q, %q causal dropout 1.000000e-01 : (!nml.tensor<[B, 2, 4, 8], f32>, !nml.tensor<[B, 2, 4, 8], f32>, !nml.tensor<[B, 2, 4, 8], f32>) -> !nml.tensor<[B, 2, 4, 8], f32>
// CHECK: %28 = nml.dim %x 1 : (!nml.tensor<[B, 4, 8], f32>) -> i64
// CHECK: %r = nml.arange [0 : i64, "?", 1 : i64](%28) : (i64) -> !nml.tensor<[4], i64>
// CHECK: %33 = nml.amin %e : (!nml.tensor<[B, 4, 16], f32>) -> !nml.tensor<[], f32>
// CHECK: %35 = nml.std %t : (!nml.tensor<[4, 4], f32>) -> !nml.tensor<[], f32>
