// Each pipe stage becomes a call with the piped value first; extra arguments follow.
// RUN: %tl-opt %s -p desugar-pipes | filecheck %s

builtin.module {
  nml.model @Classifier {
    nml.layer @fc1 = "Linear" [784 : i64, 256 : i64] {}
    nml.func @forward(%x : !nml.tensor<[B, 784], f32>) -> !nml.tensor<*, f32> attributes {arg_names = ["x"]} {
      %0 = nml.pipe %x into "self.fc1"() {arg_names = []} : (!nml.tensor<[B, 784], f32>) -> !nml.tensor<*, f32>
      %1 = nml.pipe %0 into "relu"() {arg_names = []} : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32>
      %p = nml.constant 2.000000e-01 : f64
      %2 = nml.pipe %1 into "dropout"(%p) {arg_names = [""]} : (!nml.tensor<*, f32>, f64) -> !nml.tensor<*, f32>
      %d = nml.constant -1 : i64
      %3 = nml.pipe %2 into "softmax"(%d) {arg_names = ["dim"]} : (!nml.tensor<*, f32>, i64) -> !nml.tensor<*, f32>
      nml.return %3 : !nml.tensor<*, f32>
    }
  }
}

// CHECK:      %0 = nml.call "self.fc1"(%x) {arg_names = [""]}
// CHECK-NEXT: %1 = nml.call "relu"(%0) {arg_names = [""]}
// CHECK-NEXT: %p = nml.constant 2.000000e-01 : f64
// CHECK-NEXT: %2 = nml.call "dropout"(%1, %p) {arg_names = ["", ""]}
// CHECK-NEXT: %d = nml.constant -1 : i64
// CHECK-NEXT: %3 = nml.call "softmax"(%2, %d) {arg_names = ["", "dim"]}
// CHECK-NEXT: nml.return %3
// CHECK-NOT:  nml.pipe
