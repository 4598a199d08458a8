// kernel ops become the Python constructs they print as: lets assign, reads name, calls call.
// RUN: tl-opt %s -p convert-kernel-to-triton | filecheck %s

builtin.module {
  kernel.func @vector_add attributes {arg_names = ["x_ptr", "y_ptr", "z_ptr", "n", "BLOCK"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "constexpr"], defaults = {}, param_locs = [loc(fused["vector_add.tl":3:24, "vector_add.tl":3:29]), loc(fused["vector_add.tl":3:31, "vector_add.tl":3:36]), loc(fused["vector_add.tl":3:38, "vector_add.tl":3:43]), loc("vector_add.tl":3:45), loc(fused["vector_add.tl":3:48, "vector_add.tl":3:67])]} {
    %0 = kernel.constant 0 : i64
    %1 = kernel.tl_call "program_id"(%0) {arg_names = ["axis"]}
    kernel.let "pid" = %1
    %2 = kernel.read "pid"
    %3 = kernel.read "BLOCK"
    %4 = kernel.binop "*" %2, %3
    %5 = kernel.constant 0 : i64
    %6 = kernel.read "BLOCK"
    %7 = kernel.tl_call "arange"(%5, %6) {arg_names = ["", ""]}
    %8 = kernel.binop "+" %4, %7
    kernel.let "offsets" = %8
    %9 = kernel.read "offsets"
    %10 = kernel.read "n"
    %11 = kernel.binop "<" %9, %10
    kernel.let "mask" = %11
    %12 = kernel.read "x_ptr"
    %13 = kernel.read "offsets"
    %14 = kernel.binop "+" %12, %13
    %15 = kernel.read "mask"
    %16 = kernel.load(%14, %15) {arg_names = ["", "mask"]}
    kernel.let "x" = %16
    %17 = kernel.read "y_ptr"
    %18 = kernel.read "offsets"
    %19 = kernel.binop "+" %17, %18
    %20 = kernel.read "mask"
    %21 = kernel.load(%19, %20) {arg_names = ["", "mask"]}
    kernel.let "y" = %21
    %22 = kernel.read "z_ptr"
    %23 = kernel.read "offsets"
    %24 = kernel.binop "+" %22, %23
    %25 = kernel.read "x"
    %26 = kernel.read "y"
    %27 = kernel.binop "+" %25, %26
    %28 = kernel.read "mask"
    kernel.store(%24, %27, %28) {arg_names = ["", "", "mask"]}
  }
  kernel.launcher @vector_add_launcher for @vector_add {bindings = [["input", "x"], ["input", "y"], ["output", "z"], ["numel", "x"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
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
// CHECK-NEXT: }
// CHECK-NEXT: triton.launcher @vector_add_launcher for @vector_add {bindings = [["input", "x"], ["input", "y"], ["output", "z"], ["numel", "x"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
// CHECK-NEXT: }
