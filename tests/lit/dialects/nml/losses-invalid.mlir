// Each verifier message of `nml.loss`, one case per split.
// RUN: tl-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

%0 = nml.constant 1.0 : f64
%1 = nml.loss "hinge" %0, %0 reduction "mean" {} : (f64, f64) -> f64
// CHECK: unknown loss kind `hinge`

// -----

%0 = nml.constant 1.0 : f64
%1 = nml.loss "mse" %0, %0 reduction "avg" {} : (f64, f64) -> f64
// CHECK: reduction must be one of

// -----

%0 = nml.constant 1.0 : f64
%1 = nml.loss "mse" %0, %0 reduction "mean" {beta = 1.0 : f64} : (f64, f64) -> f64
// CHECK: `mse` takes no option ['beta']
