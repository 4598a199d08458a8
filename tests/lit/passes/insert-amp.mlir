// fp16 gets fp16 autocast (the script adds the GradScaler on CUDA), bf16 bf16 autocast, fp32
// the fp32 marker (no autocast unless --precision says otherwise), auto (or no precision)
// the run-time choice; the pass is idempotent.
// RUN: tl-opt %s -p train-config,insert-amp | filecheck %s
// RUN: tl-opt %s -p train-config,insert-amp,insert-amp | filecheck %s

builtin.module {
  train.dataset @data = "digits" {flatten = true}
  train.loop @fp16 on @data {
    train.set "precision" = "fp16"
  }
  train.loop @bf16 on @data {
    train.set "precision" = "bf16"
  }
  train.loop @fp32 on @data {
    train.set "precision" = "fp32"
  }
  train.loop @unset on @data {
    train.set "epochs" = 3 : i64
  }
  train.loop @auto on @data {
    train.set "precision" = "auto"
  }
}

// CHECK:      train.loop @fp16 on @data {
// CHECK-NEXT:   train.config {{.*}}precision = "fp16"{{.*}}
// CHECK-NEXT:   train.autocast "float16"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @bf16 on @data {
// CHECK-NEXT:   train.config {{.*}}precision = "bf16"{{.*}}
// CHECK-NEXT:   train.autocast "bfloat16"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @fp32 on @data {
// CHECK-NEXT:   train.config {{.*}}precision = "fp32"{{.*}}
// CHECK-NEXT:   train.autocast "float32"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @unset on @data {
// CHECK-NEXT:   train.config {{.*}}epochs = 3 : i64{{.*}}
// CHECK-NEXT:   train.autocast "auto"
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @auto on @data {
// CHECK-NEXT:   train.config {{.*}}precision = "auto"{{.*}}
// CHECK-NEXT:   train.autocast "auto"
// CHECK-NEXT: }
