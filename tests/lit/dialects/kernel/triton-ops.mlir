// Every triton emission op in its custom form: print, re-parse, and print generic and back.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  triton.jit_func @vector_add attributes {arg_names = ["x_ptr", "y_ptr", "z_ptr", "n", "BLOCK"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "constexpr"]} {
    %0 = triton.constant 0 : i64
    %1 = triton.call "tl.program_id"(%0) {arg_names = ["axis"]}
    triton.assign "pid" = %1
    %2 = triton.name "pid"
    %3 = triton.name "BLOCK"
    %4 = triton.binop "*" %2, %3
    %5 = triton.constant 0 : i64
    %6 = triton.name "BLOCK"
    %7 = triton.call "tl.arange"(%5, %6) {arg_names = ["", ""]}
    %8 = triton.binop "+" %4, %7
    triton.assign "offsets" = %8
    %9 = triton.name "offsets"
    %10 = triton.name "n"
    %11 = triton.binop "<" %9, %10
    triton.assign "mask" = %11
    %12 = triton.name "x_ptr"
    %13 = triton.name "offsets"
    %14 = triton.binop "+" %12, %13
    %15 = triton.name "mask"
    %16 = triton.call "tl.load"(%14, %15) {arg_names = ["", "mask"]}
    triton.assign "x" = %16
    %17 = triton.name "y_ptr"
    %18 = triton.name "offsets"
    %19 = triton.binop "+" %17, %18
    %20 = triton.name "mask"
    %21 = triton.call "tl.load"(%19, %20) {arg_names = ["", "mask"]}
    triton.assign "y" = %21
    %22 = triton.name "z_ptr"
    %23 = triton.name "offsets"
    %24 = triton.binop "+" %22, %23
    %25 = triton.name "x"
    %26 = triton.name "y"
    %27 = triton.binop "+" %25, %26
    %28 = triton.name "mask"
    %29 = triton.call "tl.store"(%24, %27, %28) {arg_names = ["", "", "mask"]}
    triton.expr_stmt %29
    %30 = triton.tuple(%25, %26)
    %31 = triton.index %30[%5] {items = [":", "None", "expr"]}
    %32 = triton.method "to" %31(%6) {arg_names = [""]}
    %33 = triton.getattr "dtype" %32
    %34 = triton.unop "-" %33
    triton.if %34 {
      triton.return
    } else {
    }
    triton.for "i" in "range"(%5, %6) {
      triton.assign "j" = %33
    }
  }
  triton.launcher @vector_add_launcher for @vector_add {bindings = [["input", "x"], ["input", "y"], ["output", "z"], ["numel", "x"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
}

// CHECK: builtin.module {
// CHECK-NEXT: triton.jit_func @vector_add attributes {arg_names = ["x_ptr", "y_ptr", "z_ptr", "n", "BLOCK"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "constexpr"]} {
// CHECK-NEXT: %0 = triton.constant 0 : i64
// CHECK-NEXT: %1 = triton.call "tl.program_id"(%0) {arg_names = ["axis"]}
// CHECK-NEXT: triton.assign "pid" = %1
// CHECK-NEXT: %2 = triton.name "pid"
// CHECK-NEXT: %3 = triton.name "BLOCK"
// CHECK-NEXT: %4 = triton.binop "*" %2, %3
// CHECK-NEXT: %5 = triton.constant 0 : i64
// CHECK-NEXT: %6 = triton.name "BLOCK"
// CHECK-NEXT: %7 = triton.call "tl.arange"(%5, %6) {arg_names = ["", ""]}
// CHECK-NEXT: %8 = triton.binop "+" %4, %7
// CHECK-NEXT: triton.assign "offsets" = %8
// CHECK-NEXT: %9 = triton.name "offsets"
// CHECK-NEXT: %10 = triton.name "n"
// CHECK-NEXT: %11 = triton.binop "<" %9, %10
// CHECK-NEXT: triton.assign "mask" = %11
// CHECK-NEXT: %12 = triton.name "x_ptr"
// CHECK-NEXT: %13 = triton.name "offsets"
// CHECK-NEXT: %14 = triton.binop "+" %12, %13
// CHECK-NEXT: %15 = triton.name "mask"
// CHECK-NEXT: %16 = triton.call "tl.load"(%14, %15) {arg_names = ["", "mask"]}
// CHECK-NEXT: triton.assign "x" = %16
// CHECK-NEXT: %17 = triton.name "y_ptr"
// CHECK-NEXT: %18 = triton.name "offsets"
// CHECK-NEXT: %19 = triton.binop "+" %17, %18
// CHECK-NEXT: %20 = triton.name "mask"
// CHECK-NEXT: %21 = triton.call "tl.load"(%19, %20) {arg_names = ["", "mask"]}
// CHECK-NEXT: triton.assign "y" = %21
// CHECK-NEXT: %22 = triton.name "z_ptr"
// CHECK-NEXT: %23 = triton.name "offsets"
// CHECK-NEXT: %24 = triton.binop "+" %22, %23
// CHECK-NEXT: %25 = triton.name "x"
// CHECK-NEXT: %26 = triton.name "y"
// CHECK-NEXT: %27 = triton.binop "+" %25, %26
// CHECK-NEXT: %28 = triton.name "mask"
// CHECK-NEXT: %29 = triton.call "tl.store"(%24, %27, %28) {arg_names = ["", "", "mask"]}
// CHECK-NEXT: triton.expr_stmt %29
// CHECK-NEXT: %30 = triton.tuple(%25, %26)
// CHECK-NEXT: %31 = triton.index %30[%5] {items = [":", "None", "expr"]}
// CHECK-NEXT: %32 = triton.method "to" %31(%6) {arg_names = [""]}
// CHECK-NEXT: %33 = triton.getattr "dtype" %32
// CHECK-NEXT: %34 = triton.unop "-" %33
// CHECK-NEXT: triton.if %34 {
// CHECK-NEXT: triton.return
// CHECK-NEXT: } else {
// CHECK-NEXT: }
// CHECK-NEXT: triton.for "i" in "range"(%5, %6) {
// CHECK-NEXT: triton.assign "j" = %33
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: triton.launcher @vector_add_launcher for @vector_add {bindings = [["input", "x"], ["input", "y"], ["output", "z"], ["numel", "x"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
// CHECK-NEXT: }

// tl-opt prints triton IR as Python too: the printer loads the triton handlers itself.
// RUN: tl-opt %s -t python | filecheck %s --check-prefix=PY
// PY:      @triton.jit
// PY-NEXT: def vector_add(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
