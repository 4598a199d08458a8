// Every nml op in its custom form: print, re-parse, and print again generic
// and back; both ways give the same text.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  nml.model @Classifier from "mnist.tl" {
    nml.config @hidden = 256 : i64
    nml.layer @fc1 = "Linear" [784 : i64, #nml.cfg<"hidden">] {bias = true} {arg_locs = [loc("a.tl":1:2), loc(fused["a.tl":1:5, "a.tl":1:8])], kwarg_locs = [loc("a.tl":1:9)]}
    nml.func @forward(%x : !nml.tensor<[B, 784], f32>, %n : i64) -> !nml.tensor<*, f32> attributes {arg_names = ["x", "n"]} {
      %0 = nml.pipe %x into "self.fc1"() {arg_names = []} : (!nml.tensor<[B, 784], f32>) -> !nml.tensor<*, f32>
      %c = nml.constant 0.2 : f64
      %s = nml.constant "hi"
      %z = nml.constant #nml.none
      %1 = nml.call "softmax"(%0, %c) {arg_names = ["", "dim"]} : (!nml.tensor<*, f32>, f64) -> !nml.any
      %2 = nml.call "view"(%0, %n) {arg_names = ["", ""], method} : (!nml.tensor<*, f32>, i64) -> !nml.any
      %3 = nml.apply @fc1(%x) : (!nml.tensor<[B, 784], f32>) -> !nml.tensor<[B, 256], f32>
      %4 = nml.relu %3 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
      %5 = nml.softmax %4 dim -1 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
      %6 = nml.dropout %5 p 1.000000e-01 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
      %7 = nml.flatten %6 from 1 to -1 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
      %8 = nml.reshape %7 to [#nml.cfg<"x">, "B", -1 : i64, "?"] (%n) : (!nml.tensor<[B, 256], f32>, i64) -> !nml.tensor<*, f32>
      %9 = nml.view %7 to ["B", 16 : i64, 16 : i64] : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 16, 16], f32>
      %10 = nml.permute %9 [0, 2, 1] : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 16, 16], f32>
      %11 = nml.transpose %9 1, 2 : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 16, 16], f32>
      %12 = nml.mean %9 dims [-1] keepdim : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 16, 1], f32>
      %13 = nml.sum %9 : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[], f32>
      %14 = nml.cat %9, %10 dim 1 : (!nml.tensor<[B, 16, 16], f32>, !nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 32, 16], f32>
      %15 = nml.add %9, %c : (!nml.tensor<[B, 16, 16], f32>, f64) -> !nml.tensor<[B, 16, 16], f32>
      %16 = nml.matmul %9, %10 : (!nml.tensor<[B, 16, 16], f32>, !nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 16, 16], f32>
      %17 = nml.index %9 [":", -1 : i64, #nml.slice<1 : i64, #nml.none, #nml.none>] : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 15], f32>
      %18 = nml.index %9 ["...", "?"] (%n) : (!nml.tensor<[B, 16, 16], f32>, i64) -> !nml.tensor<[B, 16], f32>
      %19 = nml.dim %9 0 : (!nml.tensor<[B, 16, 16], f32>) -> i64
      %20 = nml.list %19, %n : (i64, i64) -> !nml.list
      %21 = nml.list : () -> !nml.list
      %22 = nml.ref @hidden : !nml.any
      %23 = nml.getattr %9 "shape" : (!nml.tensor<[B, 16, 16], f32>) -> !nml.any
      %24 = nml.kernel_call @vadd(%x, %x) {arg_names = ["", "y"]} : (!nml.tensor<[B, 784], f32>, !nml.tensor<[B, 784], f32>) -> !nml.tensor<[B, 784], f32>
      nml.return %0 : !nml.tensor<*, f32>
    }
  }
  nml.instance @net = @Classifier {hidden = 128 : i64} {override_locs = [loc("a.tl":3:20)]}
}

// CHECK: builtin.module {
// CHECK-NEXT: nml.model @Classifier from "mnist.tl" {
// CHECK-NEXT: nml.config @hidden = 256 : i64
// CHECK-NEXT: nml.layer @fc1 = "Linear" [784 : i64, #nml.cfg<"hidden">] {bias = true} {arg_locs = [loc("a.tl":1:2), loc(fused["a.tl":1:5, "a.tl":1:8])], kwarg_locs = [loc("a.tl":1:9)]}
// CHECK-NEXT: nml.func @forward(%x: !nml.tensor<[B, 784], f32>, %n: i64) -> !nml.tensor<*, f32> attributes {arg_names = ["x", "n"]} {
// CHECK-NEXT: %0 = nml.pipe %x into "self.fc1"() {arg_names = []} : (!nml.tensor<[B, 784], f32>) -> !nml.tensor<*, f32>
// CHECK-NEXT: %c = nml.constant 2.000000e-01 : f64
// CHECK-NEXT: %s = nml.constant "hi"
// CHECK-NEXT: %z = nml.constant #nml.none
// CHECK-NEXT: %1 = nml.call "softmax"(%0, %c) {arg_names = ["", "dim"]} : (!nml.tensor<*, f32>, f64) -> !nml.any
// CHECK-NEXT: %2 = nml.call "view"(%0, %n) {arg_names = ["", ""], method} : (!nml.tensor<*, f32>, i64) -> !nml.any
// CHECK-NEXT: %3 = nml.apply @fc1(%x) : (!nml.tensor<[B, 784], f32>) -> !nml.tensor<[B, 256], f32>
// CHECK-NEXT: %4 = nml.relu %3 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
// CHECK-NEXT: %5 = nml.softmax %4 dim -1 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
// CHECK-NEXT: %6 = nml.dropout %5 p 1.000000e-01 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
// CHECK-NEXT: %7 = nml.flatten %6 from 1 to -1 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
// CHECK-NEXT: %8 = nml.reshape %7 to [#nml.cfg<"x">, "B", -1 : i64, "?"](%n) : (!nml.tensor<[B, 256], f32>, i64) -> !nml.tensor<*, f32>
// CHECK-NEXT: %9 = nml.view %7 to ["B", 16 : i64, 16 : i64] : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 16, 16], f32>
// CHECK-NEXT: %10 = nml.permute %9 [0 : i64, 2 : i64, 1 : i64] : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 16, 16], f32>
// CHECK-NEXT: %11 = nml.transpose %9 1, 2 : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 16, 16], f32>
// CHECK-NEXT: %12 = nml.mean %9 dims [-1 : i64] keepdim : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 16, 1], f32>
// CHECK-NEXT: %13 = nml.sum %9 : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[], f32>
// CHECK-NEXT: %14 = nml.cat %9, %10 dim 1 : (!nml.tensor<[B, 16, 16], f32>, !nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 32, 16], f32>
// CHECK-NEXT: %15 = nml.add %9, %c : (!nml.tensor<[B, 16, 16], f32>, f64) -> !nml.tensor<[B, 16, 16], f32>
// CHECK-NEXT: %16 = nml.matmul %9, %10 : (!nml.tensor<[B, 16, 16], f32>, !nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 16, 16], f32>
// CHECK-NEXT: %17 = nml.index %9 [":", -1 : i64, #nml.slice<1 : i64, #nml.none, #nml.none>] : (!nml.tensor<[B, 16, 16], f32>) -> !nml.tensor<[B, 15], f32>
// CHECK-NEXT: %18 = nml.index %9 ["...", "?"](%n) : (!nml.tensor<[B, 16, 16], f32>, i64) -> !nml.tensor<[B, 16], f32>
// CHECK-NEXT: %19 = nml.dim %9 0 : (!nml.tensor<[B, 16, 16], f32>) -> i64
// CHECK-NEXT: %20 = nml.list %19, %n : (i64, i64) -> !nml.list
// CHECK-NEXT: %21 = nml.list : () -> !nml.list
// CHECK-NEXT: %22 = nml.ref @hidden : !nml.any
// CHECK-NEXT: %23 = nml.getattr %9 "shape" : (!nml.tensor<[B, 16, 16], f32>) -> !nml.any
// CHECK-NEXT: %24 = nml.kernel_call @vadd(%x, %x) {arg_names = ["", "y"]} : (!nml.tensor<[B, 784], f32>, !nml.tensor<[B, 784], f32>) -> !nml.tensor<[B, 784], f32>
// CHECK-NEXT: nml.return %0 : !nml.tensor<*, f32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: nml.instance @net = @Classifier {hidden = 128 : i64} {override_locs = [loc("a.tl":3:20)]}
// CHECK-NEXT: }
