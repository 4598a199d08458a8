// Calls become layer applications (`norm1` and `self.fc` alike), builtin ops with
// their constant operands folded, or kernel calls; a layer shadows a builtin of the
// same name; unknown calls are left for check-scopes.
// RUN: %tl-opt %s -p resolve-nml | filecheck %s

builtin.module {
  nml.model @Block {
    nml.config @d_model = 64 : i64
    nml.layer @norm1 = "LayerNorm" [#nml.cfg<"d_model">] {}
    nml.layer @fc = "Linear" [#nml.cfg<"d_model">, #nml.cfg<"d_model">] {}
    nml.layer @dropout = "Dropout" [1.000000e-01 : f64] {}
    nml.func @forward(%x : !nml.tensor<[B, T, 64], f32>) -> !nml.tensor<*, f32> attributes {arg_names = ["x"]} {
      %0 = nml.call "norm1"(%x) {arg_names = [""]} : (!nml.tensor<[B, T, 64], f32>) -> !nml.tensor<*, f32>
      %1 = nml.call "self.fc"(%0) {arg_names = [""]} : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32>
      %2 = nml.call "dropout"(%1) {arg_names = [""]} : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32>
      %d = nml.constant -1 : i64
      %3 = nml.call "softmax"(%2, %d) {arg_names = ["", "dim"]} : (!nml.tensor<*, f32>, i64) -> !nml.tensor<*, f32>
      %a = nml.constant 1 : i64
      %b = nml.constant 2 : i64
      %4 = nml.call "transpose"(%3, %a, %b) {arg_names = ["", "", ""], method} : (!nml.tensor<*, f32>, i64, i64) -> !nml.tensor<*, f32>
      %5 = nml.call "mystery"(%4) {arg_names = [""]} : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32>
      nml.return %5 : !nml.tensor<*, f32>
    }
  }
}

// CHECK:      %0 = nml.apply @norm1(%x)
// CHECK-NEXT: %1 = nml.apply @fc(%0)
// CHECK-NEXT: %2 = nml.apply @dropout(%1)
// CHECK-NEXT: %3 = nml.softmax %2 dim -1
// CHECK-NEXT: %4 = nml.transpose %3 1, 2
// CHECK-NEXT: %5 = nml.call "mystery"(%4)
// CHECK-NEXT: nml.return %5
