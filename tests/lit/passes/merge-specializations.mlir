// The per-instance copies `instantiate` made are dropped before the script is emitted: each
// instance and layer names its model again, and the script has one class per model.
// RUN: %tl-opt %s -p merge-specializations | filecheck %s

builtin.module attributes {tl.specialized} {
  nml.model @Block from "b.nml" {
    nml.config @d = 8 : i64
  }
  nml.model @"Net.block" from "n.nml" attributes {specializes = "Block", config = {d = 4 : i64}} {
    nml.config @d = 8 : i64
  }
  nml.model @Net from "n.nml" {
    nml.layer @block = "Block" [#nml.cfg<"d">] {} {specialized = @"Net.block"}
  }
  nml.model @"Net#b" from "n.nml" attributes {specializes = "Net", config = {}} {
    nml.layer @block = "Block" [#nml.cfg<"d">] {} {specialized = @"Net.block"}
  }
  nml.instance @a = @Net {} {config = {}}
  nml.instance @b = @"Net#b" {} {config = {}}
}

// CHECK:      builtin.module {
// CHECK-NEXT:   nml.model @Block from "b.nml" {
// CHECK-NEXT:     nml.config @d = 8 : i64
// CHECK-NEXT:   }
// CHECK-NEXT:   nml.model @Net from "n.nml" {
// CHECK-NEXT:     nml.layer @block = "Block" [#nml.cfg<"d">] {}
// CHECK-NEXT:   }
// CHECK-NEXT:   nml.instance @a = @Net {} {config = {}}
// CHECK-NEXT:   nml.instance @b = @Net {} {config = {}}
// CHECK-NEXT: }
