// Each verifier message of the torch dialect, one case per split.
// RUN: tl-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

%c = py.constant 1 : i64
torch.module_class @Net(class = %c) : "nn.Module" {
}
// CHECK: parameter `class` is not a Python identifier

// -----

torch.module_class @Net() : "nn.1Module" {
}
// CHECK: base class `1Module` is not a Python identifier

// -----

torch.module_class @Net() : "nn.Module" {
  %v = py.name "nn.Linear"
  torch.submodule "1fc" = %v
}
// CHECK: submodule `1fc` is not a Python identifier

// -----

torch.raw "def f(:\n"
// CHECK: torch.raw holds invalid Python

// -----

%v = py.name "d"
torch.field "d" = %v
// CHECK: 'torch.field' expects parent op 'torch.module_class'

// -----

%v = py.name "d"
torch.param_default "d" = %v
// CHECK: 'torch.param_default' expects parent op 'torch.module_class'
