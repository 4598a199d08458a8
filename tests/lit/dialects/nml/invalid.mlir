// Each verifier message of the nml dialect, one case per split.
// RUN: tl-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

nml.model @M {
  nml.layer @fc = "Linear" [1 : i64, 2 : i64] {} {arg_locs = [loc("a.tl":1:1)]}
}
// CHECK: `arg_locs` has 1 entries, expected 2

// -----

nml.model @M {
  nml.layer @fc = "" [] {}
}
// CHECK: layer kind must not be empty

// -----

nml.model @M {
  nml.func @f(%x: i64) -> () attributes {arg_names = []} {
    nml.return
  }
}
// CHECK: `arg_names` has 0 entries but the function type has 1

// -----

"nml.model"() <{sym_name = "M"}> ({
  "nml.func"() <{sym_name = "f", function_type = (i64) -> (), arg_names = ["x"]}> ({
  ^bb0(%x: f64):
    nml.return
  }) : () -> ()
}) : () -> ()
// CHECK: entry block arguments must match the function type's inputs

// -----

%0 = nml.constant 1 : i64
%1 = nml.call "f"(%0) {arg_names = []} : (i64) -> !nml.any
// CHECK: `arg_names` has 0 entries but the call has 1

// -----

%0 = nml.constant 1 : i64
%1 = nml.call "view"(%0) {arg_names = ["x"], method} : (i64) -> !nml.any
// CHECK: a method call needs its receiver as the first operand

// -----

%1 = nml.call ""() {arg_names = []} : () -> !nml.any
// CHECK: callee must not be empty

// -----

%0 = nml.constant 1 : i64
%1 = nml.pipe %0 into "f"() {arg_names = [""]} : (i64) -> !nml.any
// CHECK: `arg_names` has 1 entries but the stage's extra argument list has 0

// -----

%0 = nml.constant 1 : i64
%1 = nml.apply @fc(%0) {arg_names = []} : (i64) -> !nml.any
// CHECK: `arg_names` has 0 entries but the application has 1

// -----

%0 = nml.constant 1 : i64
%1 = nml.kernel_call @k(%0) {arg_names = []} : (i64) -> !nml.any
// CHECK: `arg_names` has 0 entries but the kernel call has 1

// -----

nml.instance @net = @M {a = 1 : i64} {override_locs = []}
// CHECK: `override_locs` has 0 entries, expected 1

// -----

%0 = "nml.constant"() <{value = 1 : i64}> : () -> f64
// CHECK: result type f64 does not match the value 1 : i64

// -----

%0 = nml.constant 1 : i64
%1 = nml.getattr %0 "" : (i64) -> !nml.any
// CHECK: attribute name must not be empty

// -----

%0 = nml.constant 1.0 : f64
%1 = nml.dropout %0 p 1.0 : (f64) -> f64
// CHECK: dropout probability must be in [0, 1), got 1.0

// -----

%0 = nml.constant 1.0 : f64
%1 = nml.reshape %0 to [-1 : i64, -1 : i64] : (f64) -> f64
// CHECK: at most one dimension of a reshape may be -1

// -----

%0 = nml.constant 1.0 : f64
%1 = nml.reshape %0 to [-2 : i64] : (f64) -> f64
// CHECK: reshape sizes must be non-negative or -1

// -----

%0 = nml.constant 1.0 : f64
%1 = nml.view %0 to ["?"] : (f64) -> f64
// CHECK: reshape has 1 `?` sizes but 0 dynamic operands

// -----

%0 = nml.constant 1.0 : f64
%1 = nml.permute %0 [0, 0] : (f64) -> f64
// CHECK: permute dims [0, 0] are not a permutation

// -----

%0 = nml.constant 1.0 : f64
%1 = nml.index %0 ["...", "..."] : (f64) -> f64
// CHECK: an index may hold at most one `...`

// -----

%0 = nml.constant 1.0 : f64
%1 = nml.index %0 ["?"] : (f64) -> f64
// CHECK: index has 1 `?` items but 0 dynamic operands

// -----

%1 = nml.cat dim 0 : () -> f64
// CHECK: cat needs at least one tensor

// -----

nml.config @d = 1 : i64
// CHECK: 'nml.config' expects parent op 'nml.model'

// -----

nml.return
// CHECK: 'nml.return' expects parent op 'nml.func'

// -----

%0 = nml.constant #nml.expr<"^", [1 : i64, 2 : i64]>
// CHECK: unknown expression operator '^'

// -----

%0 = "nml.list"() : () -> !nml.tensor<[-1], f32>
// CHECK: Expected integer literal

// -----

nml.model @M {
  nml.func @f(%x: !nml.tensor<[B, "H+"], f32>) -> () attributes {arg_names = ["x"]} {
    nml.return
  }
}
// CHECK: invalid tensor dim "H+": a dim is a size, a name or an expression of names such as `H+4`, `2*T`, `(H-1)//2+1`

// -----

nml.model @M {
  nml.func @f(%x: !nml.tensor<[B, "H*W"], f32>) -> () attributes {arg_names = ["x"]} {
    nml.return
  }
}
// CHECK: invalid tensor dim "H*W"
