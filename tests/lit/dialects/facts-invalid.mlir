// Each fact's verifier: the declared properties and the module's `tl.` attributes.
// RUN: tl-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

train.dataset @data = "digits" {} {per_token_length = 16 : i64}
// CHECK: `per_token_length` is for synthetic data (`load_dataset()`)

// -----

train.dataset @data {} {per_token_length = 0 : i64}
// CHECK: `per_token_length` must be positive

// -----

train.loop @net on @data attributes {synthetic_sample = [4 : i64]} {
  train.set "epochs" = 1 : i64
}
// CHECK: `synthetic_sample` and `synthetic_output` go together

// -----

train.loop @net on @data attributes {synthetic_sample = [0 : i64], synthetic_output = !nml.tensor<[B, 2], f32>} {
  train.set "epochs" = 1 : i64
}
// CHECK: `synthetic_sample` sizes must be positive

// -----

train.loop @net on @data attributes {model_output = 3 : i64} {
  train.set "epochs" = 1 : i64
}
// CHECK: 3 : i64 should be of attribute subclassing `TypeAttribute`

// -----

nml.model @Net attributes {config = {c = 4 : i64}} {
  nml.layer @fc = "Linear" [4 : i64, 2 : i64] {}
}
// CHECK: only a specialised copy (`specializes`) has a `config`

// -----

nml.model @Net {
  nml.func @forward(%c: i1) -> () attributes {arg_names = ["c"]} {
    nml.if %c : i1 {
      nml.yield
    } else {
      nml.yield
    } {branches = 3 : i64}
    nml.return
  }
}
// CHECK: `branches` is 0 (then), 1 (else) or 2 (both)

// -----

builtin.module attributes {tl.dims = {T = 0 : i64}} {
}
// CHECK: `tl.dims` maps names to positive integers

// -----

nml.model @Net {
  nml.func @forward() -> () attributes {arg_names = []} {
    %0 = nml.ref @x {bound_inside = "while"} : !nml.any
    nml.return
  }
}
// CHECK: `bound_inside` is "loop" or "branch"
