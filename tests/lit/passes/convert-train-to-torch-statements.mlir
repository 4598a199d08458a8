// A script's top-level statements become `main()`, called under the `__main__` guard.
// RUN: tl-opt %s -p convert-train-to-torch | filecheck %s
// RUN: tl-opt %s -p convert-train-to-torch -t python | filecheck %s --check-prefix=PY

builtin.module {
  train.main {
    %0 = nml.constant 0 : i64
    %1 = nml.call "manual_seed"(%0) {arg_names = [""]} : (i64) -> !nml.any
    %2 = nml.constant 8 : i64
    %x = nml.call "randn"(%2) {arg_names = [""]} : (i64) -> !nml.any
    %3 = nml.constant 2 : i64
    %y = nml.mul %3, %x : (i64, !nml.any) -> !nml.any
    %4 = nml.call "print"(%y) {arg_names = [""]} : (!nml.any) -> !nml.any
  }
}

// CHECK:      torch.script {
// CHECK-NEXT:   py.import "torch"
// CHECK-NEXT:   %[[TORCH:.*]] = py.name "torch"
// CHECK-NEXT:   %[[CUDA:.*]] = py.attribute %[[TORCH]], "cuda"
// CHECK-NEXT:   %[[AVAILABLE:.*]] = py.attribute %[[CUDA]], "is_available"
// CHECK-NEXT:   %[[GPU:.*]] = py.call %[[AVAILABLE]]()
// CHECK-NEXT:   %[[ON_GPU:.*]] = py.constant "cuda"
// CHECK-NEXT:   %[[ON_CPU:.*]] = py.constant "cpu"
// CHECK-NEXT:   %[[CHOICE:.*]] = py.ifexp %[[ON_GPU]] if %[[GPU]] else %[[ON_CPU]]
// CHECK-NEXT:   %[[DEVICE_NAME:.*]] = py.name "DEVICE"
// CHECK-NEXT:   py.assign %[[DEVICE_NAME]] = %[[CHOICE]]
// CHECK-NEXT:   py.def @main() {
// CHECK-NEXT:     %[[ZERO:.*]] = py.constant 0 : i64
// CHECK-NEXT:     %[[SEED:.*]] = py.name "torch.manual_seed"
// CHECK-NEXT:     %{{.*}} = py.call %[[SEED]](%[[ZERO]])
// CHECK-NEXT:     %[[EIGHT:.*]] = py.constant 8 : i64
// CHECK-NEXT:     %[[DEVICE:.*]] = py.name "DEVICE"
// CHECK-NEXT:     %[[RANDN:.*]] = py.name "torch.randn"
// CHECK-NEXT:     %x = py.call %[[RANDN]](%[[EIGHT]], device = %[[DEVICE]])
// CHECK-NEXT:     %[[TWO:.*]] = py.constant 2 : i64
// CHECK-NEXT:     %y = py.binop "*" %[[TWO]], %x
// CHECK-NEXT:     %[[PRINT:.*]] = py.name "print"
// CHECK-NEXT:     %{{.*}} = py.call %[[PRINT]](%y)
// CHECK-NEXT:     py.return
// CHECK-NEXT:   }
// CHECK-NEXT:   torch.main {
// CHECK-NEXT:     %[[MAIN:.*]] = py.name "main"
// CHECK-NEXT:     %{{.*}} = py.call %[[MAIN]]()
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NOT: train.main
// CHECK-NOT: torch.raw

// The assignment prints as one line, before the function that reads `DEVICE`.
// PY:      DEVICE = "cuda" if torch.cuda.is_available() else "cpu"{{$}}
// PY-EMPTY:
// PY-EMPTY:
// PY-NEXT: def main():
