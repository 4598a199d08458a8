// Every torch op in its custom form: print, re-parse, and print generic and back.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip
// RUN: tl-opt %s -t python | filecheck %s --check-prefix=PY

builtin.module {
  torch.script from "mnist.tl" {
    py.import "torch"
    %hidden = py.constant 256 : i64
    %none = py.constant #py.none
    torch.module_class @Classifier(hidden = %hidden, d_ff = %none) : "nn.Module" doc "The model." {
      %four = py.constant 4 : i64
      %h = py.name "hidden"
      %10 = py.binop "*" %four, %h
      torch.param_default "d_ff" = %10
      %h2 = py.name "hidden"
      torch.field "hidden" = %h2
      %linear = py.name "nn.Linear"
      %in = py.constant 784 : i64
      %h3 = py.name "hidden"
      %11 = py.call %linear(%in, %h3)
      torch.submodule "fc1" = %11
      py.def @forward(self, x) {
      ^bb0(%self : !py.object, %x : !py.object):
        %s = py.name "self"
        %f = py.attribute %s, "fc1"
        %0 = py.call %f(%x)
        py.return %0
      }
    }
    torch.raw "def f():\n    return 1\n"
    torch.runtime ["strip_prefixes"]
    torch.main {
      %main = py.name "f"
      %1 = py.call %main()
    }
  }
}

// CHECK:      torch.script from "mnist.tl" {
// CHECK-NEXT:   py.import "torch"
// CHECK-NEXT:   %hidden = py.constant 256 : i64
// CHECK-NEXT:   %none = py.constant #py.none
// CHECK-NEXT:   torch.module_class @Classifier(hidden = %hidden, d_ff = %none) : "nn.Module" doc "The model." {
// CHECK-NEXT:     %four = py.constant 4 : i64
// CHECK-NEXT:     %h = py.name "hidden"
// CHECK-NEXT:     %[[FF:.*]] = py.binop "*" %four, %h
// CHECK-NEXT:     torch.param_default "d_ff" = %[[FF]]
// CHECK-NEXT:     %h2 = py.name "hidden"
// CHECK-NEXT:     torch.field "hidden" = %h2
// CHECK-NEXT:     %linear = py.name "nn.Linear"
// CHECK-NEXT:     %in = py.constant 784 : i64
// CHECK-NEXT:     %h3 = py.name "hidden"
// CHECK-NEXT:     %[[FC1:.*]] = py.call %linear(%in, %h3)
// CHECK-NEXT:     torch.submodule "fc1" = %[[FC1]]
// CHECK-NEXT:     py.def @forward(self, x) {
// CHECK:        torch.raw "def f():\0A    return 1\0A"
// CHECK-NEXT:   torch.runtime ["strip_prefixes"]
// CHECK-NEXT:   torch.main {

// PY:      class Classifier(nn.Module):
// PY-NEXT:     """The model."""
// PY-EMPTY:
// PY-NEXT:     def __init__(self, hidden=256, d_ff=None):
// PY-NEXT:         super().__init__()
// PY-NEXT:         if d_ff is None:
// PY-NEXT:             d_ff = 4 * hidden
// PY-NEXT:         self.hidden = hidden
// PY-NEXT:         self.fc1 = nn.Linear(784, hidden)
// PY-EMPTY:
// PY-NEXT:     def forward(self, x):
// PY-NEXT:         return self.fc1(x)
// PY:      def f():
// PY-NEXT:     return 1
// PY:      def strip_prefixes(
// PY:      if __name__ == "__main__":
// PY-NEXT:     f()
