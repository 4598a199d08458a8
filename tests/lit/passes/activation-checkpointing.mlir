// Checkpoint the nested-model blocks of a model, or each layer when it has none.
// RUN: tl-opt %s -p train-config,activation-checkpointing | filecheck %s

builtin.module {
  nml.model @Block from "lm.tl" {
    nml.layer @ff = "Linear" [64 : i64, 64 : i64] {}
  }
  nml.model @LM from "lm.tl" {
    nml.layer @embed = "Embedding" [100 : i64, 64 : i64] {}
    nml.layer @block1 = "Block" [] {}
    nml.layer @block2 = "Block" [] {}
    nml.layer @head = "Linear" [64 : i64, 100 : i64] {}
  }
  nml.model @MLP from "lm.tl" {
    nml.layer @fc1 = "Linear" [8 : i64, 16 : i64] {}
    nml.layer @fc2 = "Linear" [16 : i64, 4 : i64] {}
  }
  nml.instance @lm = @LM {}
  nml.instance @mlp = @MLP {}
  train.dataset @data = "reverse" {}
  train.loop @lm on @data {
    train.set "activation_checkpointing" = true
  }
  train.loop @mlp on @data {
    train.set "activation_checkpointing" = true
  }
  train.loop @lm on @data {
    train.set "activation_checkpointing" = false
  }
}

// CHECK:      train.loop @lm on @data {
// CHECK-NEXT:   train.config {{.*}}activation_checkpointing = true{{.*}}
// CHECK-NEXT:   train.activation_checkpoint @lm ["block1", "block2"]
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @mlp on @data {
// CHECK-NEXT:   train.config {{.*}}activation_checkpointing = true{{.*}}
// CHECK-NEXT:   train.activation_checkpoint @mlp ["fc1", "fc2"]
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @lm on @data {
// CHECK-NEXT:   train.config {{.*}}activation_checkpointing = false{{.*}}
// CHECK-NEXT: }
