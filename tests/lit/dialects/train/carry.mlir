// A train block that carries values between batches (`carry state = none`, and learned
// starts: `carry h = net.h0`, `carry pair = (net.h0, net.c0)`, their parameters' paths) in
// its custom form: print, re-parse, and print again generic and back; both ways give the
// same text.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  nml.instance @net = @LM {}
  train.dataset @data = "words" {path = "stdlib", block_size = 35 : i64}
  train.loop @net on @data {
    train.set "objective" = "lm_loss"
    train.carry "state" = #nml.none {init_loc = loc("lm.tl":21:19), carried = !nml.tuple<[!nml.tensor<[2, B, 64], f32>, !nml.tensor<[2, B, 64], f32>]>}
    train.carry "count"
    train.carry "h" = "net.h0" {carried = !nml.tensor<[1, B, 64], f32>}
    train.carry "pair" = ["net.h0", "net.c0"]
  }
}

// CHECK:      train.loop @net on @data {
// CHECK-NEXT:   train.set "objective" = "lm_loss"
// CHECK-NEXT:   train.carry "state" = #nml.none {init_loc = loc("lm.tl":21:19), carried = !nml.tuple<[!nml.tensor<[2, B, 64], f32>, !nml.tensor<[2, B, 64], f32>]>}
// CHECK-NEXT:   train.carry "count"
// CHECK-NEXT:   train.carry "h" = "net.h0" {carried = !nml.tensor<[1, B, 64], f32>}
// CHECK-NEXT:   train.carry "pair" = ["net.h0", "net.c0"]
// CHECK-NEXT: }
