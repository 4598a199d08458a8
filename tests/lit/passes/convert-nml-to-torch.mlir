// nml models lower to torch module classes: configs to __init__ parameters,
// layers to submodules (config references as parameter names), forward to a method.
// RUN: tl-opt %s -p convert-nml-to-torch | filecheck %s
// RUN: tl-opt %s -p convert-nml-to-torch -t python | %python -c "import sys; compile(sys.stdin.read(), 'out.py', 'exec')"

builtin.module {
  nml.model @Block from "examples/block.nml" {
    nml.config @d_model = 32 : i64
    nml.config @n_heads = 4 : i64
    nml.config @d_ff = #nml.expr<"*", [4 : i64, #nml.cfg<"d_model">]>
    nml.layer @attention = "MultiHeadAttention" [#nml.cfg<"d_model">, #nml.cfg<"n_heads">] {}
    nml.layer @lstm = "LSTM" [#nml.cfg<"d_model">, #nml.cfg<"d_model">] {}
    nml.layer @ff = "Linear" [#nml.cfg<"d_model">, #nml.cfg<"d_ff">] {bias = false}
    nml.layer @pool = "MaxPool2d" [[2 : i64, 2 : i64]] {}
    nml.func @forward(%x: !nml.tensor<[B, T, 32], f32>) -> !nml.tensor<*, f32> attributes {arg_names = ["x"]} {
      %0 = nml.apply @attention(%x) : (!nml.tensor<[B, T, 32], f32>) -> !nml.tensor<[B, T, 32], f32>
      %1 = nml.apply @lstm(%0) : (!nml.tensor<[B, T, 32], f32>) -> !nml.tensor<[B, T, 32], f32>
      %2 = nml.apply @ff(%1) : (!nml.tensor<[B, T, 32], f32>) -> !nml.tensor<[B, T, 128], f32>
      %3 = nml.gelu %2 : (!nml.tensor<[B, T, 128], f32>) -> !nml.tensor<[B, T, 128], f32>
      %4 = nml.softmax %3 dim -1 : (!nml.tensor<[B, T, 128], f32>) -> !nml.tensor<[B, T, 128], f32>
      %5 = nml.dropout %4 p 1.000000e-01 : (!nml.tensor<[B, T, 128], f32>) -> !nml.tensor<[B, T, 128], f32>
      %6 = nml.reshape %5 to ["B", -1 : i64, 64 : i64] : (!nml.tensor<[B, T, 128], f32>) -> !nml.tensor<[B, ?, 64], f32>
      %7 = nml.transpose %6 1, 2 : (!nml.tensor<[B, ?, 64], f32>) -> !nml.tensor<[B, 64, ?], f32>
      %8 = nml.mean %7 dims [-1 : i64] keepdim : (!nml.tensor<[B, 64, ?], f32>) -> !nml.tensor<[B, 64, 1], f32>
      %9 = nml.index %8 [":", 0 : i64, "..."] : (!nml.tensor<[B, 64, 1], f32>) -> !nml.tensor<[B, 1], f32>
      %d = nml.ref @d_model : !nml.any
      %10 = nml.mul %9, %d : (!nml.tensor<[B, 1], f32>, !nml.any) -> !nml.tensor<[B, 1], f32>
      %11 = nml.cat %10, %10 dim 1 : (!nml.tensor<[B, 1], f32>, !nml.tensor<[B, 1], f32>) -> !nml.tensor<[B, 2], f32>
      %12 = nml.flatten %11 from 1 to -1 : (!nml.tensor<[B, 2], f32>) -> !nml.tensor<[B, 2], f32>
      nml.return %12 : !nml.tensor<[B, 2], f32>
    }
  }
  nml.model @Net from "examples/net.tl" {
    nml.layer @block = "Block" [] {d_model = 16 : i64}
    nml.func @forward(%x: !nml.tensor<[B, T, 16], f32>) -> !nml.tensor<*, f32> attributes {arg_names = ["x"]} {
      %0 = nml.apply @block(%x) : (!nml.tensor<[B, T, 16], f32>) -> !nml.tensor<[B, 2], f32>
      %1 = nml.neg %0 : (!nml.tensor<[B, 2], f32>) -> !nml.tensor<[B, 2], f32>
      nml.return %1 : !nml.tensor<[B, 2], f32>
    }
  }
  nml.instance @net = @Net {}
}

// CHECK:      torch.script from "net.tl" {
// CHECK-NEXT:   torch.module_class @Block(d_model = "32", n_heads = "4", d_ff = "None") : "nn.Module" doc "The `Block` model from block.nml." {
// CHECK-NEXT:     torch.param_default "d_ff" = "4 * d_model"
// CHECK-NEXT:     torch.field "d_model" = "d_model"
// CHECK-NEXT:     torch.submodule "attention" = "nn.MultiheadAttention"("d_model", "n_heads", batch_first = "True")
// CHECK-NEXT:     torch.submodule "lstm" = "nn.LSTM"("d_model", "d_model", batch_first = "True")
// CHECK-NEXT:     torch.submodule "ff" = "nn.Linear"("d_model", "d_ff", bias = "False")
// CHECK-NEXT:     torch.submodule "pool" = "nn.MaxPool2d"("(2, 2)")
// CHECK-NEXT:     torch.method @forward(x) {
// CHECK-NEXT:     ^bb0(%x: !torch.value):
// CHECK-NEXT:       %0 = torch.call_module "attention"(%x) kind "first_of_tuple_self_attention"
// CHECK-NEXT:       %1 = torch.call_module "lstm"(%0) kind "first_of_tuple"
// CHECK-NEXT:       %2 = torch.call_module "ff"(%1)
// CHECK-NEXT:       %3 = torch.call_function "F.gelu"(%2)
// CHECK-NEXT:       %4 = torch.constant -1 : i64
// CHECK-NEXT:       %5 = torch.call_function "torch.softmax"(%3, dim = %4)
// CHECK-NEXT:       %6 = torch.constant 1.000000e-01 : f64
// CHECK-NEXT:       %7 = torch.dropout %5, %6
// CHECK-NEXT:       %8 = torch.constant 0 : i64
// CHECK-NEXT:       %9 = torch.call_method %7, "size"(%8)
// CHECK-NEXT:       %10 = torch.constant -1 : i64
// CHECK-NEXT:       %11 = torch.constant 64 : i64
// CHECK-NEXT:       %12 = torch.call_method %7, "reshape"(%9, %10, %11)
// CHECK-NEXT:       %13 = torch.constant 1 : i64
// CHECK-NEXT:       %14 = torch.constant 2 : i64
// CHECK-NEXT:       %15 = torch.call_method %12, "transpose"(%13, %14)
// CHECK-NEXT:       %16 = torch.constant -1 : i64
// CHECK-NEXT:       %17 = torch.constant true
// CHECK-NEXT:       %18 = torch.call_method %15, "mean"(dim = %16, keepdim = %17)
// CHECK-NEXT:       %19 = torch.constant #torch.none
// CHECK-NEXT:       %20 = torch.constant #torch.none
// CHECK-NEXT:       %21 = torch.constant #torch.none
// CHECK-NEXT:       %22 = torch.slice %19, %20, %21
// CHECK-NEXT:       %23 = torch.constant 0 : i64
// CHECK-NEXT:       %24 = torch.constant #torch.ellipsis
// CHECK-NEXT:       %25 = torch.getitem %18[%22, %23, %24]
// CHECK-NEXT:       %d = torch.self_attr "d_model"
// CHECK-NEXT:       %26 = torch.binop "*" %25, %d
// CHECK-NEXT:       %27 = torch.list[%26, %26]
// CHECK-NEXT:       %28 = torch.constant 1 : i64
// CHECK-NEXT:       %29 = torch.call_function "torch.cat"(%27, dim = %28)
// CHECK-NEXT:       %30 = torch.constant 1 : i64
// CHECK-NEXT:       %31 = torch.call_method %29, "flatten"(%30)
// CHECK-NEXT:       torch.return %31
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   torch.module_class @Net() : "nn.Module" doc "The `Net` model from net.tl." {
// CHECK-NEXT:     torch.submodule "block" = "Block"(d_model = "16")
// CHECK-NEXT:     torch.method @forward(x) {
// CHECK-NEXT:     ^bb0(%[[X:.*]]: !torch.value):
// CHECK-NEXT:       %[[B:.*]] = torch.call_module "block"(%[[X]])
// CHECK-NEXT:       %[[N:.*]] = torch.unop "-" %[[B]]
// CHECK-NEXT:       torch.return %[[N]]
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: nml.instance @net = @Net {}
