// The compile mode: "reduce-overhead" unless the block names one or says `false`.
// RUN: tl-opt %s -p insert-compile | filecheck %s
// RUN: tl-opt %s -p insert-compile,insert-compile | filecheck %s

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
// CHECK-NEXT:   train.set "epochs" = 1 : i64
// CHECK-NEXT:   train.compile @unset mode "reduce-overhead"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @yes on @data {
// CHECK-NEXT:   train.set "compile" = true
// CHECK-NEXT:   train.compile @yes mode "reduce-overhead"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @no on @data {
// CHECK-NEXT:   train.set "compile" = false
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @autotune on @data {
// CHECK-NEXT:   train.set "compile" = "max-autotune"
// CHECK-NEXT:   train.compile @autotune mode "max-autotune"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @plain on @data {
// CHECK-NEXT:   train.set "compile" = "default"
// CHECK-NEXT:   train.compile @plain mode "default"
// CHECK-NEXT: }
