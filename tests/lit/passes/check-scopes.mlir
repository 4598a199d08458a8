// Unresolved names are errors, unused layers warnings.
// RUN: not %tl-opt %s -p check-scopes 2>&1 | filecheck %s

builtin.module {
  nml.model @M {
    nml.config @hidden = 8 : i64
    nml.layer @fc = "Linear" [8 : i64, 8 : i64] {} loc("m.tl":2:5)
    nml.layer @spare = "Linear" [8 : i64, 8 : i64] {} loc("m.tl":3:5)
    nml.func @forward(%x : !nml.tensor<[B, 8], f32>) -> !nml.tensor<*, f32> attributes {arg_names = ["x"]} {
      %0 = nml.apply @fc(%x) : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<*, f32>
      %1 = nml.call "self.fc2"(%0) {arg_names = [""]} : (!nml.tensor<*, f32>) -> !nml.tensor<*, f32> loc("m.tl":5:17)
      %2 = nml.ref @hiden : !nml.any loc("m.tl":5:30)
      nml.return %1 : !nml.tensor<*, f32>
    }
  }
}

// CHECK-DAG: error[TL0303]: `M` has no layer `fc2`
// CHECK-DAG: = help: did you mean `fc`?
// CHECK-DAG: error[TL0301]: undefined name `hiden`
// CHECK-DAG: = help: did you mean `hidden`?
// CHECK-DAG: warning[TL0304]: layer `spare` is declared but never used
