// Dims that are expressions of symbols (catalogue/dim_expr.py) print quoted and
// parse back: what shape inference writes after a padded conv or a pool.
// RUN: tl-opt %s | tl-opt | filecheck %s

builtin.module {
  nml.model @Block from "b.nml" {
    nml.layer @conv = "Conv2d" [8 : i64, 8 : i64, 3 : i64] {padding = 3 : i64} {arg_locs = [loc("b.nml":1:1), loc("b.nml":1:2), loc("b.nml":1:3)], kwarg_locs = [loc("b.nml":1:4)]}
    nml.func @forward(%x : !nml.tensor<[B, 8, H, W], f32>) -> !nml.tensor<[B, 8, "H+4", "(W+1)//2"], f32> attributes {arg_names = ["x"]} {
      %0 = nml.apply @conv(%x) : (!nml.tensor<[B, 8, H, W], f32>) -> !nml.tensor<[B, 8, "H+4", "(W+1)//2"], f32>
      nml.return %0 : !nml.tensor<[B, 8, "H+4", "(W+1)//2"], f32>
    }
  }
}

// CHECK: nml.func @forward(%x: !nml.tensor<[B, 8, H, W], f32>) -> !nml.tensor<[B, 8, "H+4", "(W+1)//2"], f32>
// CHECK: nml.apply @conv(%x) : (!nml.tensor<[B, 8, H, W], f32>) -> !nml.tensor<[B, 8, "H+4", "(W+1)//2"], f32>
