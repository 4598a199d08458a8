// `distributed = true` gets the DDP marker, which the lowering makes the whole DDP script of
// (passes/insert-ddp-omitted.test shows the script with and without it).
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
}

// CHECK:      train.loop @net on @data {
// CHECK-NEXT:   train.config {{.*}}distributed = true{{.*}}
// CHECK-NEXT:   train.ddp_wrap @net
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @single on @data {
// CHECK-NEXT:   train.config {{.*}}distributed = false{{.*}}
// CHECK-NEXT: }
