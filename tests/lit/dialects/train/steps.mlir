// A train block of several models and `step` lines (`train (G, D) on data:`) in its custom
// form: print, re-parse, and print again generic and back; both ways give the same text.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  nml.instance @G = @Generator {}
  nml.instance @D = @Discriminator {}
  train.dataset @data = "digits" {}
  train.loop @G on @data attributes {models = [@G, @D]} {
    train.set "epochs" = 25 : i64
    train.step @d_loss with #nml.call<"Adam", [#nml.call<"D", [], {}>], {lr = 2.000000e-04 : f64}> {objective_loc = loc("gan.tl":29:10)}
    train.step @g_loss with #nml.call<"Adam", [#nml.call<"G", [], {}>], {lr = 2.000000e-04 : f64}>
  }
}

// CHECK:      train.loop @G on @data attributes {models = [@G, @D]} {
// CHECK-NEXT:   train.set "epochs" = 25 : i64
// CHECK-NEXT:   train.step @d_loss with #nml.call<"Adam", [#nml.call<"D", [], {}>], {lr = 2.000000e-04 : f64}> {objective_loc = loc("gan.tl":29:10)}
// CHECK-NEXT:   train.step @g_loss with #nml.call<"Adam", [#nml.call<"G", [], {}>], {lr = 2.000000e-04 : f64}>
// CHECK-NEXT: }
