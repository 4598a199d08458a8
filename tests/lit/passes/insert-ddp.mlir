// `distributed = true` (or "ddp") gets a process group, the DDP wrap, a sharded sampler and
// rank-0 actions; "fsdp" gets `train.fsdp_shard` and checkpoints written by every rank.
// RUN: tl-opt %s -p insert-ddp | filecheck %s
// RUN: tl-opt %s -p insert-ddp,insert-ddp | filecheck %s

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
}

// CHECK:      train.loop @net on @data {
// CHECK-NEXT:   train.set "distributed" = true
// CHECK-NEXT:   train.process_group "nccl"
// CHECK-NEXT:   train.ddp_wrap @net
// CHECK-NEXT:   train.distributed_sampler @data shuffle
// CHECK-NEXT:   train.rank_zero_only ["logging", "metrics", "checkpoint"]
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @single on @data {
// CHECK-NEXT:   train.set "distributed" = false
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @named on @data {
// CHECK-NEXT:   train.set "distributed" = "ddp"
// CHECK-NEXT:   train.process_group "nccl"
// CHECK-NEXT:   train.ddp_wrap @named
// CHECK:      train.loop @big on @data {
// CHECK-NEXT:   train.set "distributed" = "fsdp"
// CHECK-NEXT:   train.process_group "nccl"
// CHECK-NEXT:   train.fsdp_shard @big []
// CHECK-NEXT:   train.distributed_sampler @data shuffle
// CHECK-NEXT:   train.rank_zero_only ["logging", "metrics"]
// CHECK-NEXT: }
