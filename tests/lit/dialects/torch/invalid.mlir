// Each verifier message of the torch dialect, one case per split.
// RUN: tl-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

torch.module_class @Net(class = "1") : "nn.Module" {
}
// CHECK: parameter `class` is not a Python identifier

// -----

torch.module_class @Net() : "nn.Module" {
  torch.submodule "fc" = "nn.Linear"(bias = "False", "3")
}
// CHECK: torch.submodule: a positional argument follows a keyword

// -----

torch.module_class @Net() : "nn.Module" {
  torch.init_tensor "fc" "weight" = "normal_"("0.02")
}
// CHECK: torch.init_tensor: its arguments are keywords

// -----

torch.module_class @Net() : "nn.Module" {
  torch.init_tensor "fc" "weight-1" = "normal_"()
}
// CHECK: tensor name `weight-1` is not a Python identifier

// -----

torch.module_class @Net() : "nn.Module" {
  torch.method @forward(x) {
  ^bb0(%x : !torch.value):
    %0 = torch.call_module "attn"(%x) kind "second"
    torch.return %0
  }
}
// CHECK: torch.call_module: unknown kind `second`

// -----

torch.module_class @Net() : "nn.Module" {
  torch.method @forward(x) {
  ^bb0(%x : !torch.value):
    %0 = torch.call_module "attn"(%x, %x) kind "first_of_tuple_self_attention"
    torch.return %0
  }
}
// CHECK: torch.call_module: a self-attention call takes one input

// -----

torch.def @f(x, y) {
^bb0(%x : !torch.value):
  torch.return %x
}
// CHECK: torch.def: 2 parameters but 1 block arguments

// -----

torch.def @f(x) {
^bb0(%x : !torch.value):
  %0 = torch.binop "<>" %x, %x
  torch.return %0
}
// CHECK: torch.binop: unknown operator `<>`

// -----

torch.def @f(x) {
^bb0(%x : !torch.value):
  %0 = torch.unop "!" %x
  torch.return %0
}
// CHECK: torch.unop: unknown operator `!`

// -----

torch.def @f(x) {
^bb0(%x : !torch.value):
  %0 = torch.getitem %x[]
  torch.return %0
}
// CHECK: torch.getitem needs at least one index

// -----

torch.def @f() {
  %0 = torch.constant [1 : i64]
  torch.return %0
}
// CHECK: torch.constant cannot hold [1 : i64]

// -----

torch.raw "def f(:\n"
// CHECK: torch.raw holds invalid Python

// -----

torch.def @f(x) {
^bb0(%x : !torch.value):
  %0 = torch.call_function "torch.1bad"(%x)
  torch.return %0
}
// CHECK: function `1bad` is not a Python identifier

// -----

torch.def @f(x) {
^bb0(%x : !torch.value):
  %p = torch.constant 5.000000e-01 : f64
  %0 = torch.dropout %x, %p
  torch.return %0
}
// CHECK: 'torch.dropout' expects ancestor op 'torch.method'

// -----

torch.field "d" = "d"
// CHECK: 'torch.field' expects parent op 'torch.module_class'
