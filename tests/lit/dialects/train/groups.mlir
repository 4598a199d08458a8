// Parameter groups and a step of several optimizers (`group hidden = params(net.blocks,
// ndim=2)`, `step ce with Muon(hidden), AdamW(rest)`) in their custom form: print, re-parse,
// and print again generic and back; both ways give the same text.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  nml.instance @net = @Net {}
  train.dataset @data = "digits" {}
  train.loop @net on @data {
    train.group @hidden = #nml.call<"params", ["net.blocks"], {ndim = 2 : i64}> {value_loc = loc("gpt.tl":26:20)}
    train.group @gains = #nml.call<"params", ["net"], {match = "*.bias"}>
    train.group @rest = #nml.expr<"-", [#nml.expr<"-", ["net", "hidden"]>, "gains"]>
    train.step @ce with [#nml.call<"Muon", ["hidden"], {lr = 2.000000e-02 : f64}>, #nml.call<"AdamW", ["rest", #nml.call<"gains", [], {weight_decay = 0.000000e+00 : f64}>], {lr = 3.000000e-03 : f64}>] {optimizer_loc = [loc("gpt.tl":28:18), loc("gpt.tl":28:41)]}
  }
}

// CHECK:      train.loop @net on @data {
// CHECK-NEXT:   train.group @hidden = #nml.call<"params", ["net.blocks"], {ndim = 2 : i64}> {value_loc = loc("gpt.tl":26:20)}
// CHECK-NEXT:   train.group @gains = #nml.call<"params", ["net"], {match = "*.bias"}>
// CHECK-NEXT:   train.group @rest = #nml.expr<"-", [#nml.expr<"-", ["net", "hidden"]>, "gains"]>
// CHECK-NEXT:   train.step @ce with [#nml.call<"Muon", ["hidden"], {lr = 2.000000e-02 : f64}>, #nml.call<"AdamW", ["rest", #nml.call<"gains", [], {weight_decay = 0.000000e+00 : f64}>], {lr = 3.000000e-03 : f64}>] {optimizer_loc = [loc("gpt.tl":28:18), loc("gpt.tl":28:41)]}
// CHECK-NEXT: }
