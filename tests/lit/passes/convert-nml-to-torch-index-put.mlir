// `x[...] = v` and `x[...] += v` (nml.index_put) lower to PyTorch's assignment: in place
// into a tensor nothing else sees (`out`, a zeros_like, in and after the loop; `h` after
// its first assignment, read before only by the mask's comparison), into a copy
// otherwise (`h`, a layer's output: `h = h.clone()` first). The round trip keeps
// `in_place`, which convert-nml-to-torch sets.
// RUN: tl-opt %s | tl-opt --print-op-generic | tl-opt | filecheck %s --check-prefix=RT
// RUN: tl-opt %s -p convert-nml-to-torch | filecheck %s
// RUN: tl-opt %s -p convert-nml-to-torch -t python | filecheck %s --check-prefix=PY

builtin.module {
  nml.model @M from "m.nml" {
    nml.layer @fc = "Linear" [8 : i64, 8 : i64] {} {arg_locs = [loc("m.nml":3:21), loc("m.nml":3:24)], kwarg_locs = []}
    nml.func @forward(%x: !nml.tensor<[N, 8], f32>, %y: !nml.tensor<[N], f32>) -> !nml.tensor<[N, 8], f32> attributes {arg_names = ["x", "y"]} {
      %h = nml.apply @fc(%x) {arg_names = [""]} : (!nml.tensor<[N, 8], f32>) -> !nml.tensor<[N, 8], f32>
      %h_1 = nml.index_put "=" %h [":", 0 : i64], %y : (!nml.tensor<[N, 8], f32>, !nml.tensor<[N], f32>) -> !nml.tensor<[N, 8], f32>
      %0 = nml.constant 5.000000e-01 : f64
      %1 = nml.gt %h_1, %0 : (!nml.tensor<[N, 8], f32>, f64) -> !nml.tensor<[N, 8], i1>
      %2 = nml.constant 0.000000e+00 : f64
      %h_2 = nml.index_put "=" %h_1 ["?"](%1), %2 : (!nml.tensor<[N, 8], f32>, f64, !nml.tensor<[N, 8], i1>) -> !nml.tensor<[N, 8], f32>
      %out = nml.zeros_like %x : (!nml.tensor<[N, 8], f32>) -> !nml.tensor<[N, 8], f32>
      %3 = nml.constant 0.000000e+00 : f64
      %4 = nml.gt %y, %3 : (!nml.tensor<[N], f32>, f64) -> !nml.tensor<[N], i1>
      %5 = nml.nonzero %4 : (!nml.tensor<[N], i1>) -> !nml.tuple<[!nml.tensor<[nnz_9_19], i64>]>
      %idx = nml.index %5 [0 : i64] : (!nml.tuple<[!nml.tensor<[nnz_9_19], i64>]>) -> !nml.tensor<[nnz_9_19], i64>
      %6 = nml.index %h_2 ["?"](%idx) : (!nml.tensor<[N, 8], f32>, !nml.tensor<[nnz_9_19], i64>) -> !nml.tensor<[nnz_9_19, 8], f32>
      %7 = nml.constant 2.000000e+00 : f64
      %8 = nml.mul %6, %7 : (!nml.tensor<[nnz_9_19, 8], f32>, f64) -> !nml.tensor<[nnz_9_19, 8], f32>
      %out_1 = nml.index_put "+=" %out ["?"](%idx), %8 in_place : (!nml.tensor<[N, 8], f32>, !nml.tensor<[nnz_9_19, 8], f32>, !nml.tensor<[nnz_9_19], i64>) -> !nml.tensor<[N, 8], f32>
      %9 = nml.constant 2 : i64
      %out_2 = nml.for range(%9 : i64) iter_args(%out_1 : !nml.tensor<[N, 8], f32>) -> !nml.tensor<[N, 8], f32> {
      ^bb0(%i: i64, %out_3: !nml.tensor<[N, 8], f32>):
        %10 = nml.constant 1.000000e+00 : f64
        %out_4 = nml.index_put "-=" %out_3 [":", "?"](%i), %10 : (!nml.tensor<[N, 8], f32>, f64, i64) -> !nml.tensor<[N, 8], f32>
        nml.yield %out_4 : !nml.tensor<[N, 8], f32>
      }
      nml.return %out_2 : !nml.tensor<[N, 8], f32>
    }
  }
}

// RT: %h_1 = nml.index_put "=" %h [":", 0 : i64], %y : (!nml.tensor<[N, 8], f32>, !nml.tensor<[N], f32>) -> !nml.tensor<[N, 8], f32>
// RT: %h_2 = nml.index_put "=" %h_1 ["?"](%1), %2 : (!nml.tensor<[N, 8], f32>, f64, !nml.tensor<[N, 8], i1>) -> !nml.tensor<[N, 8], f32>
// RT: %out_1 = nml.index_put "+=" %out ["?"](%idx), %8 in_place : (!nml.tensor<[N, 8], f32>, !nml.tensor<[nnz_9_19, 8], f32>, !nml.tensor<[nnz_9_19], i64>) -> !nml.tensor<[N, 8], f32>
// RT: %out_4 = nml.index_put "-=" %out_3 [":", "?"](%i), %10 : (!nml.tensor<[N, 8], f32>, f64, i64) -> !nml.tensor<[N, 8], f32>

// CHECK: py.def @forward(self, x, y) {
// CHECK: %[[H:.*]] = py.call %{{.*}}(%{{.*}})
// CHECK: %[[CLONE:.*]] = py.attribute %[[H]], "clone"
// CHECK-NEXT: %[[COPY:.*]] = py.call %[[CLONE]]()
// CHECK: %[[COL:.*]] = py.subscript %[[COPY]][%{{.*}}, %{{.*}}]
// CHECK-NEXT: py.assign %[[COL]] = %y
// CHECK: %[[MASKED:.*]] = py.subscript %[[COPY]][%{{.*}}]
// CHECK-NEXT: py.assign %[[MASKED]] = %{{.*}}
// CHECK: %[[OUT:.*]] = py.call %{{.*}}(%x)
// CHECK: %[[ROWS:.*]] = py.subscript %[[OUT]][%{{.*}}]
// CHECK-NEXT: py.augassign "+=" %[[ROWS]], %{{.*}}
// CHECK: py.for
// CHECK: py.augassign "-=" %{{.*}}, %{{.*}}
// CHECK-NOT: clone

// PY:      def forward(self, x, y):
// PY-NEXT:     h = self.fc(x)
// PY-NEXT:     h = h.clone()
// PY-NEXT:     h[:, 0] = y
// PY-NEXT:     h[h > 0.5] = 0.0
// PY-NEXT:     out = torch.zeros_like(x)
// PY-NEXT:     idx = torch.nonzero(y > 0.0, as_tuple=True)[0]
// PY-NEXT:     out[idx] += h[idx] * 2.0
// PY-NEXT:     for i in range(2):
// PY-NEXT:         out[:, i] -= 1.0
// PY-NEXT:     return out
