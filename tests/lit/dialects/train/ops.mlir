// Every train op in its custom form: print, re-parse, and print again generic
// and back; both ways give the same text.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  nml.instance @net = @Classifier {}
  train.dataset @data = "digits" {flatten = true} {option_locs = [loc("a.tl":2:30)]}
  train.dataset @synthetic {}
  train.weights "net" from "gpt2" {sources = ["transformer.h.{i}.attn.bias", "transformer.h.{i}.{l}.weight"], targets = ["", "h.{i}.{l}.weight"], transposed = [false, true]}
  train.weights "bert" from "bert-tiny" {sources = [["l.{i}.query.weight", "l.{i}.key.weight", "l.{i}.value.weight"], "c.weight"], targets = ["a.{i}.in_proj_weight", ["q.weight", "k.weight"]], transposed = [false, true], along = [0 : i64, -1 : i64], config_keys = ["num_attention_heads"], config_names = ["n_head"]}
  train.loop @net on @data {
    train.set "epochs" = 10 : i64
    train.set "optimizer" = #nml.call<"Adam", [], {lr = 1.000000e-03 : f64}> {value_loc = loc("a.tl":5:17)}
    train.set "loss" = #nml.call<"CrossEntropy", [], {}>
    train.set "precision" = "fp16"
    train.checkpoint every 5 "epochs"
    train.autocast "float16"
    train.ddp_wrap @net
    train.fsdp_shard @net ["h", "enc"]
    train.compile @net mode "max-autotune"
    train.activation_checkpoint @net ["block1"]
  }
  train.main {
    %0 = nml.constant "done"
    %1 = nml.call "print"(%0) {arg_names = [""]} : (!nml.str) -> !nml.any
  }
}

// CHECK: builtin.module {
// CHECK-NEXT: nml.instance @net = @Classifier {}
// CHECK-NEXT: train.dataset @data = "digits" {flatten = true} {option_locs = [loc("a.tl":2:30)]}
// CHECK-NEXT: train.dataset @synthetic {}
// CHECK-NEXT: train.weights "net" from "gpt2" {sources = ["transformer.h.{i}.attn.bias", "transformer.h.{i}.{l}.weight"], targets = ["", "h.{i}.{l}.weight"], transposed = [false, true]}
// CHECK-NEXT: train.weights "bert" from "bert-tiny" {sources = [["l.{i}.query.weight", "l.{i}.key.weight", "l.{i}.value.weight"], "c.weight"], targets = ["a.{i}.in_proj_weight", ["q.weight", "k.weight"]], transposed = [false, true], along = [0 : i64, -1 : i64], config_keys = ["num_attention_heads"], config_names = ["n_head"]}
// CHECK-NEXT: train.loop @net on @data {
// CHECK-NEXT: train.set "epochs" = 10 : i64
// CHECK-NEXT: train.set "optimizer" = #nml.call<"Adam", [], {lr = 1.000000e-03 : f64}> {value_loc = loc("a.tl":5:17)}
// CHECK-NEXT: train.set "loss" = #nml.call<"CrossEntropy", [], {}>
// CHECK-NEXT: train.set "precision" = "fp16"
// CHECK-NEXT: train.checkpoint every 5 "epochs"
// CHECK-NEXT: train.autocast "float16"
// CHECK-NEXT: train.ddp_wrap @net
// CHECK-NEXT: train.fsdp_shard @net ["h", "enc"]
// CHECK-NEXT: train.compile @net mode "max-autotune"
// CHECK-NEXT: train.activation_checkpoint @net ["block1"]
// CHECK-NEXT: }
// CHECK-NEXT: train.main {
// CHECK-NEXT: %0 = nml.constant "done"
// CHECK-NEXT: %1 = nml.call "print"(%0) {arg_names = [""]} : (!nml.str) -> !nml.any
// CHECK-NEXT: }
// CHECK-NEXT: }
