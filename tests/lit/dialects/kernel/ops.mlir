// Every kernel op in its custom form: print, re-parse, and print generic and back.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  kernel.func @vector_add attributes {arg_names = ["x_ptr", "n", "BLOCK"], param_kinds = ["ptr", "scalar", "constexpr"], defaults = {}, param_locs = [loc("a.tl":1:20), loc("a.tl":1:27), loc("a.tl":1:30)]} {
    %0 = kernel.constant 0 : i64
    %1 = kernel.tl_call "program_id"(%0) {arg_names = ["axis"]}
    kernel.let "pid" = %1
    %2 = kernel.read "pid"
    %3 = kernel.read "BLOCK"
    %4 = kernel.binop "*" %2, %3
    %5 = kernel.index %4[%0] {items = [":", "None", "expr"]}
    %6 = kernel.load(%4, %2) {arg_names = ["", "mask"]}
    kernel.store(%4, %6, %2) {arg_names = ["", "", "mask"]}
    %7 = kernel.method "to" %6(%3) {arg_names = [""]}
    %8 = kernel.tl_attr "float32"
    %9 = kernel.getattr "dtype" %6
    %t = kernel.tuple(%3, %3)
    kernel.if %2 {
      kernel.return
    } else {
    }
    kernel.for "i" in "range"(%0, %3) {
      %10 = kernel.unop "-" %2
    }
  }
  kernel.launcher @vector_add_launcher for @vector_add {bindings = [["input", "x"], ["numel", "x"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
}

// CHECK: builtin.module {
// CHECK-NEXT: kernel.func @vector_add attributes {arg_names = ["x_ptr", "n", "BLOCK"], param_kinds = ["ptr", "scalar", "constexpr"], defaults = {}, param_locs = [loc("a.tl":1:20), loc("a.tl":1:27), loc("a.tl":1:30)]} {
// CHECK-NEXT: %0 = kernel.constant 0 : i64
// CHECK-NEXT: %1 = kernel.tl_call "program_id"(%0) {arg_names = ["axis"]}
// CHECK-NEXT: kernel.let "pid" = %1
// CHECK-NEXT: %2 = kernel.read "pid"
// CHECK-NEXT: %3 = kernel.read "BLOCK"
// CHECK-NEXT: %4 = kernel.binop "*" %2, %3
// CHECK-NEXT: %5 = kernel.index %4[%0] {items = [":", "None", "expr"]}
// CHECK-NEXT: %6 = kernel.load(%4, %2) {arg_names = ["", "mask"]}
// CHECK-NEXT: kernel.store(%4, %6, %2) {arg_names = ["", "", "mask"]}
// CHECK-NEXT: %7 = kernel.method "to" %6(%3) {arg_names = [""]}
// CHECK-NEXT: %8 = kernel.tl_attr "float32"
// CHECK-NEXT: %9 = kernel.getattr "dtype" %6
// CHECK-NEXT: %t = kernel.tuple(%3, %3)
// CHECK-NEXT: kernel.if %2 {
// CHECK-NEXT: kernel.return
// CHECK-NEXT: } else {
// CHECK-NEXT: }
// CHECK-NEXT: kernel.for "i" in "range"(%0, %3) {
// CHECK-NEXT: %10 = kernel.unop "-" %2
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: kernel.launcher @vector_add_launcher for @vector_add {bindings = [["input", "x"], ["numel", "x"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
// CHECK-NEXT: }
