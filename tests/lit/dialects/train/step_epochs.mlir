// Steps that run in some epochs only (`step teach with Adam(T) until epoch 15`, `from epoch
// 16`): `first_epoch` and `last_epoch` print, re-parse and round-trip through the generic form.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  nml.instance @T = @Teacher {}
  nml.instance @S = @Student {}
  train.dataset @data = "digits" {}
  train.loop @T on @data attributes {models = [@T, @S]} {
    train.set "freeze" = [] {value_loc = loc("distill.tl":44:14)}
    train.step @teach with #nml.call<"Adam", [#nml.call<"T", [], {}>], {lr = 1.000000e-03 : f64}> {last_epoch = 15 : i64, window_loc = loc("distill.tl":45:40)}
    train.step @distil with #nml.call<"Adam", [#nml.call<"S", [], {}>], {lr = 3.000000e-03 : f64}> {first_epoch = 16 : i64, last_epoch = 40 : i64}
  }
}

// CHECK:      train.loop @T on @data attributes {models = [@T, @S]} {
// CHECK-NEXT:   train.set "freeze" = [] {value_loc = loc("distill.tl":44:14)}
// CHECK-NEXT:   train.step @teach with #nml.call<"Adam", [#nml.call<"T", [], {}>], {lr = 1.000000e-03 : f64}> {last_epoch = 15 : i64, window_loc = loc("distill.tl":45:40)}
// CHECK-NEXT:   train.step @distil with #nml.call<"Adam", [#nml.call<"S", [], {}>], {lr = 3.000000e-03 : f64}> {first_epoch = 16 : i64, last_epoch = 40 : i64}
// CHECK-NEXT: }
