// The compile mode: "reduce-overhead" unless the block names one or says `false` (train-config
// writes `compile` and `compile_mode`).
// RUN: tl-opt %s -p train-config,insert-compile | filecheck %s
// RUN: tl-opt %s -p train-config,insert-compile,insert-compile | filecheck %s

builtin.module {
  train.dataset @data = "digits" {flatten = true}
  train.loop @unset on @data {
    train.set "epochs" = 1 : i64
  }
  train.loop @yes on @data {
    train.set "compile" = true
  }
  train.loop @no on @data {
    train.set "compile" = false
  }
  train.loop @autotune on @data {
    train.set "compile" = "max-autotune"
  }
  train.loop @plain on @data {
    train.set "compile" = "default"
  }
}

// CHECK:      train.loop @unset on @data {
// CHECK-NEXT:   train.config {{.*}}epochs = 1 : i64{{.*}}
// CHECK-NEXT:   train.compile @unset mode "reduce-overhead"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @yes on @data {
// CHECK-NEXT:   train.config {{.*}}compile = "on", compile_mode = "reduce-overhead"{{.*}}
// CHECK-NEXT:   train.compile @yes mode "reduce-overhead"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @no on @data {
// CHECK-NEXT:   train.config {{.*}}compile = "off"{{.*}}
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @autotune on @data {
// CHECK-NEXT:   train.config {{.*}}compile = "on", compile_mode = "max-autotune"{{.*}}
// CHECK-NEXT:   train.compile @autotune mode "max-autotune"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @plain on @data {
// CHECK-NEXT:   train.config {{.*}}compile = "on", compile_mode = "default"{{.*}}
// CHECK-NEXT:   train.compile @plain mode "default"
// CHECK-NEXT: }
