// The facts passes hand each other are declared properties of the ops they describe
// (docs/ir.md, "Facts"): they print in the op's attribute dictionary, read back as
// properties (the generic form shows them in `<{...}>`), and round-trip both ways; the
// module's `tl.` attributes likewise.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module attributes {tl.dims = {T = 16 : i64}, tl.specialized} {
  nml.model @Block attributes {specializes = "Block", config = {c = 4 : i64}} {
    nml.layer @fc = "Linear" [4 : i64, 2 : i64] {}
  }
  nml.model @Net {
    nml.layer @block = "Block" [] {} {specialized = @Block}
    nml.layer @h = "Linear" [2 : i64, 2 : i64] {} {count = 3 : i64}
    nml.func @forward(%x: !nml.tensor<[B, 4], f32>, %c: i1) -> !nml.tensor<[B, 2], f32> attributes {arg_names = ["x", "c"]} {
      %0 = nml.apply @block(%x) : (!nml.tensor<[B, 4], f32>) -> !nml.tensor<[B, 2], f32>
      %1 = nml.for @h iter_args(%0 : !nml.tensor<[B, 2], f32>) -> !nml.tensor<[B, 2], f32> attributes {var = "block", iterations = 3 : i64} {
      ^bb0(%i: i64, %y: !nml.tensor<[B, 2], f32>):
        nml.yield %y : !nml.tensor<[B, 2], f32>
      }
      %2 = nml.if %c : i1 -> !nml.tensor<[B, 2], f32> {
        nml.yield %1 : !nml.tensor<[B, 2], f32>
      } else {
        nml.yield %1 : !nml.tensor<[B, 2], f32>
      } {branches = 0 : i64}
      %3 = nml.ref @later {bound_inside = "loop"} : !nml.any
      %4 = nml.list %2, %2 {tuple} : (!nml.tensor<[B, 2], f32>, !nml.tensor<[B, 2], f32>) -> !nml.list
      nml.return %2 : !nml.tensor<[B, 2], f32>
    }
  }
  nml.instance @net = @Net {} {config = {}}
  train.dataset @data {} {per_token_length = 16 : i64}
  train.loop @net on @data attributes {model_output = !nml.tensor<[B, 2], f32>, synthetic_sample = [4 : i64], synthetic_output = !nml.tensor<[B, 2], f32>} {
    train.set "epochs" = 1 : i64
  }
}

// CHECK:      builtin.module attributes {tl.dims = {T = 16 : i64}, tl.specialized} {
// CHECK-NEXT:   nml.model @Block attributes {specializes = "Block", config = {c = 4 : i64}} {
// CHECK:          nml.layer @block = "Block" [] {} {specialized = @Block}
// CHECK:          %1 = nml.for @h iter_args(%0 : !nml.tensor<[B, 2], f32>) -> !nml.tensor<[B, 2], f32> attributes {var = "block", iterations = 3 : i64} {
// CHECK:          } {branches = 0 : i64}
// CHECK:        nml.instance @net = @Net {} {config = {}}
// CHECK-NEXT:   train.dataset @data {} {per_token_length = 16 : i64}
// CHECK-NEXT:   train.loop @net on @data attributes {model_output = !nml.tensor<[B, 2], f32>, synthetic_sample = [4 : i64], synthetic_output = !nml.tensor<[B, 2], f32>} {

// GENERIC:      "nml.model"() <{sym_name = "Block", specializes = "Block", config = {c = 4 : i64}}>
// GENERIC:      "nml.layer"() <{sym_name = "block", kind = "Block", args = [], kwargs = {}, specialized = @Block}>
// GENERIC:      "nml.for"(%0) <{layers = @h, var = "block", iterations = 3 : i64, operandSegmentSizes = array<i32: 0, 1>}>
// GENERIC:      "nml.if"(%c) <{branches = 0 : i64}>
// GENERIC:      "nml.ref"() <{symbol = @later, bound_inside = "loop"}>
// GENERIC:      "nml.list"(%2, %2) <{tuple}>
// GENERIC:      "nml.instance"() <{sym_name = "net", model = @Net, overrides = {}, config = {}}>
// GENERIC:      "train.dataset"() <{sym_name = "data", options = {}, per_token_length = 16 : i64}>
// GENERIC:      "train.loop"() <{model = @net, data = @data, model_output = !nml.tensor<[B, 2], f32>, synthetic_sample = [4 : i64], synthetic_output = !nml.tensor<[B, 2], f32>}>
