// A script's top-level statements become `main()`, called under the `__main__` guard.
// RUN: tl-opt %s -p convert-train-to-torch | filecheck %s

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
// CHECK-NEXT:   torch.import "torch"
// CHECK-NEXT:   torch.raw "DEVICE = \22cuda\22 if torch.cuda.is_available() else \22cpu\22"
// CHECK-NEXT:   torch.def @main() {
// CHECK-NEXT:     %[[ZERO:.*]] = torch.constant 0 : i64
// CHECK-NEXT:     %{{.*}} = torch.call_function "torch.manual_seed"(%[[ZERO]])
// CHECK-NEXT:     %[[EIGHT:.*]] = torch.constant 8 : i64
// CHECK-NEXT:     %[[DEVICE:.*]] = torch.global "DEVICE"
// CHECK-NEXT:     %x = torch.call_function "torch.randn"(%[[EIGHT]], device = %[[DEVICE]])
// CHECK-NEXT:     %[[TWO:.*]] = torch.constant 2 : i64
// CHECK-NEXT:     %y = torch.binop "*" %[[TWO]], %x
// CHECK-NEXT:     %{{.*}} = torch.call_function "print"(%y)
// CHECK-NEXT:     torch.return
// CHECK-NEXT:   }
// CHECK-NEXT:   torch.main {
// CHECK-NEXT:     %{{.*}} = torch.call_function "main"()
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NOT: train.main
