// Each instance's configuration folded to literals: the model's defaults in order
// (`d_ff` uses `d_model`), then the instance's overrides. The second instance of a model
// gets its own copy of it (`specializes`), which shape inference types for that instance.
// RUN: %tl-opt %s -p instantiate | filecheck %s

builtin.module {
  nml.model @Block from "b.nml" {
    nml.config @d_model = 512 : i64
    nml.config @d_ff = #nml.expr<"*", [4 : i64, #nml.cfg<"d_model">]>
    nml.config @causal = true
    nml.config @act = "gelu"
  }
  nml.instance @small = @Block {d_model = 256 : i64}
  nml.instance @plain = @Block {}
  nml.instance @lost = @Nowhere {}
}

// CHECK:      builtin.module attributes {tl.specialized} {
// CHECK:      nml.model @"Block#plain" from "b.nml" attributes {specializes = "Block", config = {d_model = 512 : i64, d_ff = 2048 : i64, causal = true, act = "gelu"}} {
// CHECK:      nml.instance @small = @Block {d_model = 256 : i64} {config = {d_model = 256 : i64, d_ff = 1024 : i64, causal = true, act = "gelu"}}
// CHECK-NEXT: nml.instance @plain = @"Block#plain" {} {config = {d_model = 512 : i64, d_ff = 2048 : i64, causal = true, act = "gelu"}}
// CHECK-NEXT: nml.instance @lost = @Nowhere {}
// CHECK-NEXT: }
