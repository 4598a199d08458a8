// In a script, the kernels move after its imports, behind an `if` that falls back to
// Triton's interpreter on a machine without a CUDA GPU (py ops, not text).
// RUN: tl-opt %s -p convert-kernel-to-triton | filecheck %s
// RUN: tl-opt %s -p convert-kernel-to-triton -t python | filecheck %s --check-prefix=PY

builtin.module {
  kernel.func @copy attributes {arg_names = ["x_ptr"], param_kinds = ["ptr"], defaults = {}, param_locs = [loc("copy.tl":1:17)]} {
    %0 = kernel.read "x_ptr"
    %1 = kernel.load(%0) {arg_names = [""]}
    kernel.store(%0, %1) {arg_names = ["", ""]}
  }
  torch.script from "copy.tl" {
    py.import "torch"
    torch.main {
      %f = py.name "main"
      %2 = py.call %f()
    }
  }
}

// CHECK:      torch.script from "copy.tl" {
// CHECK-NEXT:   py.import "torch"
// CHECK-NEXT:   py.import "os"
// CHECK-NEXT:   py.import "sys"
// CHECK-NEXT:   py.import "torch"
// CHECK-NEXT:   %[[TORCH:.+]] = py.name "torch"
// CHECK-NEXT:   %[[CUDA:.+]] = py.attribute %[[TORCH]], "cuda"
// CHECK-NEXT:   %[[AVAILABLE:.+]] = py.attribute %[[CUDA]], "is_available"
// CHECK-NEXT:   %[[GPU:.+]] = py.call %[[AVAILABLE]]()
// CHECK-NEXT:   %[[NO_GPU:.+]] = py.unop "not" %[[GPU]]
// CHECK-NEXT:   %[[VARIABLE:.+]] = py.constant "TRITON_INTERPRET"
// CHECK-NEXT:   %[[OS:.+]] = py.name "os"
// CHECK-NEXT:   %[[ENVIRON:.+]] = py.attribute %[[OS]], "environ"
// CHECK-NEXT:   %[[UNSET:.+]] = py.compare ["not in"] %[[VARIABLE]], %[[ENVIRON]]
// CHECK-NEXT:   %[[BOTH:.+]] = py.binop "and" %[[NO_GPU]], %[[UNSET]]
// CHECK-NEXT:   py.if %[[BOTH]] {
// CHECK-NEXT:     py.comment "No CUDA GPU: run the kernels in Triton's interpreter, on the CPU (slowly)."
// CHECK-NEXT:     %[[OS2:.+]] = py.name "os"
// CHECK-NEXT:     %[[ENVIRON2:.+]] = py.attribute %[[OS2]], "environ"
// CHECK-NEXT:     %[[KEY:.+]] = py.constant "TRITON_INTERPRET"
// CHECK-NEXT:     %[[SLOT:.+]] = py.subscript %[[ENVIRON2]][%[[KEY]]]
// CHECK-NEXT:     %[[ONE:.+]] = py.constant "1"
// CHECK-NEXT:     py.assign %[[SLOT]] = %[[ONE]]
// CHECK-NEXT:     %[[NAME:.+]] = py.name "__name__"
// CHECK-NEXT:     %[[MAIN:.+]] = py.constant "__main__"
// CHECK-NEXT:     %[[IS_MAIN:.+]] = py.compare ["=="] %[[NAME]], %[[MAIN]]
// CHECK-NEXT:     py.if %[[IS_MAIN]] {
// CHECK-NEXT:       py.comment "Triton reads it at import: start again with it set."
// CHECK:            %[[EXECV:.+]] = py.call %{{.+}}(%{{.+}}, %{{.+}})
// CHECK-NEXT:       py.expr %[[EXECV]]
// CHECK:          } else {
// CHECK:        } else {
// CHECK:        }
// CHECK-NEXT:   triton.jit_func @copy
// CHECK:        torch.main {
// CHECK-NOT:  torch.raw

// PY:      import os
// PY-NEXT: import sys
// PY-EMPTY:
// PY-NEXT: import torch
// PY:      if not torch.cuda.is_available() and "TRITON_INTERPRET" not in os.environ:
// PY-NEXT:     # No CUDA GPU: run the kernels in Triton's interpreter, on the CPU (slowly).
// PY-NEXT:     os.environ["TRITON_INTERPRET"] = "1"
// PY-NEXT:     if __name__ == "__main__":
// PY-NEXT:         # Triton reads it at import: start again with it set.
// PY-NEXT:         os.execv(sys.executable, sys.orig_argv)
// PY-EMPTY:
// PY-EMPTY:
// PY-NEXT: @triton.jit
// PY-NEXT: def copy(x_ptr):
