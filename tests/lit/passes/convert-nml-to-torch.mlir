// nml models lower to torch module classes: configs to __init__ parameters,
// layers to submodules (config references as parameter names), forward to a method;
// every value is a py op (the configs' defaults before the class, each layer's
// constructor call before its torch.submodule, the forward a py.def).
// RUN: tl-opt %s -p convert-nml-to-torch | filecheck %s
// RUN: tl-opt %s -p convert-nml-to-torch -t python | filecheck %s --check-prefix=PY
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
// CHECK-NEXT:   %0 = py.constant 32 : i64
// CHECK-NEXT:   %1 = py.constant 4 : i64
// CHECK-NEXT:   %2 = py.constant #py.none
// CHECK-NEXT:   torch.module_class @Block(d_model = %0, n_heads = %1, d_ff = %2) : "nn.Module" doc "The `Block` model from block.nml." {
// CHECK-NEXT:     %3 = py.constant 4 : i64
// CHECK-NEXT:     %4 = py.name "d_model"
// CHECK-NEXT:     %5 = py.binop "*" %3, %4
// CHECK-NEXT:     torch.param_default "d_ff" = %5
// CHECK-NEXT:     %6 = py.name "d_model"
// CHECK-NEXT:     torch.field "d_model" = %6
// CHECK-NEXT:     %7 = py.name "nn.MultiheadAttention"
// CHECK-NEXT:     %8 = py.name "d_model"
// CHECK-NEXT:     %9 = py.name "n_heads"
// CHECK-NEXT:     %10 = py.constant true
// CHECK-NEXT:     %11 = py.call %7(%8, %9, batch_first = %10)
// CHECK-NEXT:     torch.submodule "attention" = %11
// CHECK-NEXT:     %12 = py.name "nn.LSTM"
// CHECK-NEXT:     %13 = py.name "d_model"
// CHECK-NEXT:     %14 = py.name "d_model"
// CHECK-NEXT:     %15 = py.constant true
// CHECK-NEXT:     %16 = py.call %12(%13, %14, batch_first = %15)
// CHECK-NEXT:     torch.submodule "lstm" = %16
// CHECK-NEXT:     %17 = py.name "nn.Linear"
// CHECK-NEXT:     %18 = py.name "d_model"
// CHECK-NEXT:     %19 = py.name "d_ff"
// CHECK-NEXT:     %20 = py.constant false
// CHECK-NEXT:     %21 = py.call %17(%18, %19, bias = %20)
// CHECK-NEXT:     torch.submodule "ff" = %21
// CHECK-NEXT:     %22 = py.name "nn.MaxPool2d"
// CHECK-NEXT:     %23 = py.constant 2 : i64
// CHECK-NEXT:     %24 = py.constant 2 : i64
// CHECK-NEXT:     %25 = py.tuple[%23, %24]
// CHECK-NEXT:     %26 = py.call %22(%25)
// CHECK-NEXT:     torch.submodule "pool" = %26
// CHECK-NEXT:     py.def @forward(self, x) {
// CHECK-NEXT:     ^bb0(%self: !py.object, %x: !py.object):
// CHECK-NEXT:       %27 = py.name "self"
// CHECK-NEXT:       %28 = py.attribute %27, "attention"
// CHECK-NEXT:       %29 = py.constant false
// CHECK-NEXT:       %30 = py.call %28(%x, %x, %x, need_weights = %29)
// CHECK-NEXT:       %31 = py.constant 0 : i64
// CHECK-NEXT:       %32 = py.subscript %30[%31]
// CHECK-NEXT:       %33 = py.name "self"
// CHECK-NEXT:       %34 = py.attribute %33, "lstm"
// CHECK-NEXT:       %35 = py.call %34(%32)
// CHECK-NEXT:       %36 = py.constant 0 : i64
// CHECK-NEXT:       %37 = py.subscript %35[%36]
// CHECK-NEXT:       %38 = py.name "self"
// CHECK-NEXT:       %39 = py.attribute %38, "ff"
// CHECK-NEXT:       %40 = py.call %39(%37)
// CHECK-NEXT:       %41 = py.name "F.gelu"
// CHECK-NEXT:       %42 = py.call %41(%40)
// CHECK-NEXT:       %43 = py.name "torch.softmax"
// CHECK-NEXT:       %44 = py.constant -1 : i64
// CHECK-NEXT:       %45 = py.call %43(%42, dim = %44)
// CHECK-NEXT:       %46 = py.name "F.dropout"
// CHECK-NEXT:       %47 = py.constant 1.000000e-01 : f64
// CHECK-NEXT:       %48 = py.name "self"
// CHECK-NEXT:       %49 = py.attribute %48, "training"
// CHECK-NEXT:       %50 = py.call %46(%45, p = %47, training = %49)
// CHECK-NEXT:       %51 = py.attribute %50, "reshape"
// CHECK-NEXT:       %52 = py.attribute %50, "size"
// CHECK-NEXT:       %53 = py.constant 0 : i64
// CHECK-NEXT:       %54 = py.call %52(%53)
// CHECK-NEXT:       %55 = py.constant -1 : i64
// CHECK-NEXT:       %56 = py.constant 64 : i64
// CHECK-NEXT:       %57 = py.call %51(%54, %55, %56)
// CHECK-NEXT:       %58 = py.attribute %57, "transpose"
// CHECK-NEXT:       %59 = py.constant 1 : i64
// CHECK-NEXT:       %60 = py.constant 2 : i64
// CHECK-NEXT:       %61 = py.call %58(%59, %60)
// CHECK-NEXT:       %62 = py.attribute %61, "mean"
// CHECK-NEXT:       %63 = py.constant -1 : i64
// CHECK-NEXT:       %64 = py.constant true
// CHECK-NEXT:       %65 = py.call %62(dim = %63, keepdim = %64)
// CHECK-NEXT:       %66 = py.slice
// CHECK-NEXT:       %67 = py.constant 0 : i64
// CHECK-NEXT:       %68 = py.constant #py.ellipsis
// CHECK-NEXT:       %69 = py.subscript %65[%66, %67, %68]
// CHECK-NEXT:       %70 = py.name "self"
// CHECK-NEXT:       %d = py.attribute %70, "d_model"
// CHECK-NEXT:       %71 = py.binop "*" %69, %d
// CHECK-NEXT:       %72 = py.name "torch.cat"
// CHECK-NEXT:       %73 = py.list[%71, %71]
// CHECK-NEXT:       %74 = py.constant 1 : i64
// CHECK-NEXT:       %75 = py.call %72(%73, dim = %74)
// CHECK-NEXT:       %76 = py.attribute %75, "flatten"
// CHECK-NEXT:       %77 = py.constant 1 : i64
// CHECK-NEXT:       %78 = py.call %76(%77)
// CHECK-NEXT:       py.return %78
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   torch.module_class @Net() : "nn.Module" doc "The `Net` model from net.tl." {
// CHECK-NEXT:     %79 = py.name "Block"
// CHECK-NEXT:     %80 = py.constant 16 : i64
// CHECK-NEXT:     %81 = py.call %79(d_model = %80)
// CHECK-NEXT:     torch.submodule "block" = %81
// CHECK-NEXT:     py.def @forward(self, x) {
// CHECK-NEXT:     ^bb0(%self_1: !py.object, %x_1: !py.object):
// CHECK-NEXT:       %82 = py.name "self"
// CHECK-NEXT:       %83 = py.attribute %82, "block"
// CHECK-NEXT:       %84 = py.call %83(%x_1)
// CHECK-NEXT:       %85 = py.unop "-" %84
// CHECK-NEXT:       py.return %85
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: nml.instance @net = @Net {}

// PY:      class Block(nn.Module):
// PY-NEXT:     """The `Block` model from block.nml."""
// PY-EMPTY:
// PY-NEXT:     def __init__(self, d_model=32, n_heads=4, d_ff=None):
// PY-NEXT:         super().__init__()
// PY-NEXT:         if d_ff is None:
// PY-NEXT:             d_ff = 4 * d_model
// PY-NEXT:         self.d_model = d_model
// PY-NEXT:         self.attention = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
// PY-NEXT:         self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
// PY-NEXT:         self.ff = nn.Linear(d_model, d_ff, bias=False)
// PY-NEXT:         self.pool = nn.MaxPool2d((2, 2))
// PY-EMPTY:
// PY-NEXT:     def forward(self, x):
// PY-NEXT:         h = F.gelu(self.ff(self.lstm(self.attention(x, x, x, need_weights=False)[0])[0]))
// PY-NEXT:         h = F.dropout(torch.softmax(h, dim=-1), p=0.1, training=self.training)
// PY-NEXT:         h = h.reshape(h.size(0), -1, 64).transpose(1, 2).mean(dim=-1, keepdim=True)[:, 0, ...]
// PY-NEXT:         h = h * self.d_model
// PY-NEXT:         return torch.cat([h, h], dim=1).flatten(1)
// PY-EMPTY:
// PY-EMPTY:
// PY-NEXT: class Net(nn.Module):
// PY-NEXT:     """The `Net` model from net.tl."""
// PY-EMPTY:
// PY-NEXT:     def __init__(self):
// PY-NEXT:         super().__init__()
// PY-NEXT:         self.block = Block(d_model=16)
// PY-EMPTY:
// PY-NEXT:     def forward(self, x):
// PY-NEXT:         return -self.block(x)
