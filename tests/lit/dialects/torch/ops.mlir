// Every torch op in its custom form: print, re-parse, and print generic and back.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  torch.script from "mnist.tl" {
    torch.import "torch"
    torch.import "torch.nn.functional" as "F"
    torch.from_import "torch" ["nn"]
    torch.module_class @Classifier(hidden = "256", p = "0.1", d_ff = "None") : "nn.Module" doc "The model." {
      torch.param_default "d_ff" = "4 * hidden"
      torch.field "p" = "p"
      torch.submodule "fc1" = "nn.Linear"("784", "hidden", bias = "True")
      torch.submodule "attn" = "nn.MultiheadAttention"("hidden", "4", batch_first = "True")
      torch.init_tensor "fc1" "weight" = "normal_"(mean = "0.0", std = "0.02")
      torch.init_tensor "attn" "out_proj.bias" = "zeros_"() each
      torch.method @forward(x, mask = "None") {
      ^bb0(%x : !torch.value, %mask : !torch.value):
        %0 = torch.call_module "fc1"(%x)
        %1 = torch.call_module "attn"(%0) kind "first_of_tuple_self_attention"
        %2 = torch.call_module "lstm"(%1) kind "first_of_tuple"
        %c = torch.constant -1 : i64
        %3 = torch.call_function "torch.softmax"(%2, dim = %c)
        %p = torch.self_attr "p"
        %4 = torch.dropout %3, %p
        %n = torch.constant #torch.none
        %e = torch.constant #torch.ellipsis
        %b = torch.constant true
        %f = torch.constant 5.000000e-01 : f64
        %s = torch.constant "mean"
        %5 = torch.slice %n, %n, %n
        %6 = torch.getitem %4[%e, %5, %c]
        %7 = torch.binop "@" %6, %6
        %8 = torch.unop "-" %7
        %9 = torch.getattr %8, "shape"
        %10 = torch.list [%9, %c]
        %11 = torch.tuple []
        %12 = torch.call_method %8, "view"(%10)
        %13 = torch.global "torch.float16"
        %14 = torch.ternary %f if %b else %c
        torch.return %12
      }
    }
    torch.def @helper(count, scale = "2") decorators ["functools.cache"] {
    ^bb0(%count : !torch.value, %scale : !torch.value):
      %k = torch.kernel_launch "vector_add_launcher"(%count, BLOCK = %scale)
      torch.return %k
    }
    torch.raw "def f():\n    return 1\n"
    torch.main {
      %z = torch.constant "hi"
    }
  }
}

// CHECK:      torch.script from "mnist.tl" {
// CHECK-NEXT:   torch.import "torch"
// CHECK-NEXT:   torch.import "torch.nn.functional" as "F"
// CHECK-NEXT:   torch.from_import "torch" ["nn"]
// CHECK-NEXT:   torch.module_class @Classifier(hidden = "256", p = "0.1", d_ff = "None") : "nn.Module" doc "The model." {
// CHECK-NEXT:     torch.param_default "d_ff" = "4 * hidden"
// CHECK-NEXT:     torch.field "p" = "p"
// CHECK-NEXT:     torch.submodule "fc1" = "nn.Linear"("784", "hidden", bias = "True")
// CHECK-NEXT:     torch.submodule "attn" = "nn.MultiheadAttention"("hidden", "4", batch_first = "True")
// CHECK-NEXT:     torch.init_tensor "fc1" "weight" = "normal_"(mean = "0.0", std = "0.02")
// CHECK-NEXT:     torch.init_tensor "attn" "out_proj.bias" = "zeros_"() each
// CHECK-NEXT:     torch.method @forward(x, mask = "None") {
// CHECK-NEXT:     ^bb0(%x: !torch.value, %mask: !torch.value):
// CHECK-NEXT:       %0 = torch.call_module "fc1"(%x)
// CHECK-NEXT:       %1 = torch.call_module "attn"(%0) kind "first_of_tuple_self_attention"
// CHECK-NEXT:       %2 = torch.call_module "lstm"(%1) kind "first_of_tuple"
// CHECK-NEXT:       %c = torch.constant -1 : i64
// CHECK-NEXT:       %3 = torch.call_function "torch.softmax"(%2, dim = %c)
// CHECK-NEXT:       %p = torch.self_attr "p"
// CHECK-NEXT:       %4 = torch.dropout %3, %p
// CHECK-NEXT:       %n = torch.constant #torch.none
// CHECK-NEXT:       %e = torch.constant #torch.ellipsis
// CHECK-NEXT:       %b = torch.constant true
// CHECK-NEXT:       %f = torch.constant 5.000000e-01 : f64
// CHECK-NEXT:       %s = torch.constant "mean"
// CHECK-NEXT:       %5 = torch.slice %n, %n, %n
// CHECK-NEXT:       %6 = torch.getitem %4[%e, %5, %c]
// CHECK-NEXT:       %7 = torch.binop "@" %6, %6
// CHECK-NEXT:       %8 = torch.unop "-" %7
// CHECK-NEXT:       %9 = torch.getattr %8, "shape"
// CHECK-NEXT:       %10 = torch.list[%9, %c]
// CHECK-NEXT:       %11 = torch.tuple[]
// CHECK-NEXT:       %12 = torch.call_method %8, "view"(%10)
// CHECK-NEXT:       %13 = torch.global "torch.float16"
// CHECK-NEXT:       %14 = torch.ternary %f if %b else %c
// CHECK-NEXT:       torch.return %12
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   torch.def @helper(count, scale = "2") decorators ["functools.cache"] {
// CHECK-NEXT:   ^bb0(%count: !torch.value, %scale: !torch.value):
// CHECK-NEXT:     %k = torch.kernel_launch "vector_add_launcher"(%count, BLOCK = %scale)
// CHECK-NEXT:     torch.return %k
// CHECK-NEXT:   }
// CHECK-NEXT:   torch.raw "def f():\0A    return 1\0A"
// CHECK-NEXT:   torch.main {
// CHECK-NEXT:     %z = torch.constant "hi"
// CHECK-NEXT:   }
// CHECK-NEXT: }
