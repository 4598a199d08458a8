// `distributed = true` (or "ddp") gets the DDP marker, "fsdp" `train.fsdp_shard` (its
// blocks: the model's layers that are models), which the lowering makes the whole
// data-parallel script of (passes/insert-ddp-omitted.test shows the script with and without it).
// RUN: tl-opt %s -p train-config,insert-ddp | filecheck %s
// RUN: tl-opt %s -p train-config,insert-ddp,insert-ddp | filecheck %s

builtin.module {
  train.dataset @data = "digits" {flatten = true}
  train.loop @net on @data {
    train.set "distributed" = true
  }
  train.loop @single on @data {
    train.set "distributed" = false
  }
  train.loop @named on @data {
    train.set "distributed" = "ddp"
  }
  train.loop @big on @data {
    train.set "distributed" = "fsdp"
  }
  train.loop @G on @data attributes {models = [@G, @D]} {
    train.set "distributed" = "fsdp"
    train.step @d_loss with #nml.call<"Adam", [#nml.call<"D", [], {}>], {lr = 2.000000e-04 : f64}>
  }
}

// CHECK:      train.loop @net on @data {
// CHECK-NEXT:   train.config {{.*}}distributed = "ddp"{{.*}}
// CHECK-NEXT:   train.ddp_wrap @net
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @single on @data {
// CHECK-NEXT:   train.config {{.*}}distributed = none{{.*}}
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @named on @data {
// CHECK-NEXT:   train.config {{.*}}distributed = "ddp"{{.*}}
// CHECK-NEXT:   train.ddp_wrap @named
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @big on @data {
// CHECK-NEXT:   train.config {{.*}}distributed = "fsdp"{{.*}}
// CHECK-NEXT:   train.fsdp_shard @big []
// CHECK-NEXT: }
// A block of several models: one `fully_shard` each, the model no step names (`G` here) too.
// CHECK-NEXT: train.loop @G on @data attributes {models = [@G, @D]} {
// CHECK-NEXT:   train.config {{.*}}distributed = "fsdp"{{.*}}
// CHECK-NEXT:   train.step @d_loss
// CHECK-NEXT:   train.fsdp_shard @G []
// CHECK-NEXT:   train.fsdp_shard @D []
// CHECK-NEXT: }
