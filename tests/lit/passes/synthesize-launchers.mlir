// Launchers from dataflow: pointers, sizes, grid axes and constexpr defaults.
// RUN: tl-opt %s -p synthesize-launchers | filecheck %s

builtin.module {
  kernel.func @scaled_add attributes {arg_names = ["x_ptr", "y_ptr", "out_ptr", "n", "alpha", "BLOCK"], param_kinds = ["scalar", "scalar", "scalar", "scalar", "scalar", "constexpr"], defaults = {}, param_locs = [loc(fused["kernels.tl":1:24, "kernels.tl":1:29]), loc(fused["kernels.tl":1:31, "kernels.tl":1:36]), loc(fused["kernels.tl":1:38, "kernels.tl":1:45]), loc("kernels.tl":1:47), loc(fused["kernels.tl":1:50, "kernels.tl":1:55]), loc(fused["kernels.tl":1:57, "kernels.tl":1:76])]} {
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
    %22 = kernel.read "out_ptr"
    %23 = kernel.read "offsets"
    %24 = kernel.binop "+" %22, %23
    %25 = kernel.read "x"
    %26 = kernel.read "alpha"
    %27 = kernel.read "y"
    %28 = kernel.binop "*" %26, %27
    %29 = kernel.binop "+" %25, %28
    %30 = kernel.read "mask"
    kernel.store(%24, %29, %30) {arg_names = ["", "", "mask"]}
  }
  kernel.func @bias_gelu attributes {arg_names = ["x_ptr", "b_ptr", "out_ptr", "M", "N", "BLOCK_M", "BLOCK_N"], param_kinds = ["scalar", "scalar", "scalar", "scalar", "scalar", "constexpr", "constexpr"], defaults = {}, param_locs = [loc(fused["kernels.tl":8:23, "kernels.tl":8:28]), loc(fused["kernels.tl":8:30, "kernels.tl":8:35]), loc(fused["kernels.tl":8:37, "kernels.tl":8:44]), loc("kernels.tl":8:46), loc("kernels.tl":8:49), loc(fused["kernels.tl":8:52, "kernels.tl":8:73]), loc(fused["kernels.tl":8:75, "kernels.tl":8:96])]} {
    %0 = kernel.constant 0 : i64
    %1 = kernel.tl_call "program_id"(%0) {arg_names = ["axis"]}
    kernel.let "pid_m" = %1
    %2 = kernel.constant 1 : i64
    %3 = kernel.tl_call "program_id"(%2) {arg_names = ["axis"]}
    kernel.let "pid_n" = %3
    %4 = kernel.read "pid_m"
    %5 = kernel.read "BLOCK_M"
    %6 = kernel.binop "*" %4, %5
    %7 = kernel.constant 0 : i64
    %8 = kernel.read "BLOCK_M"
    %9 = kernel.tl_call "arange"(%7, %8) {arg_names = ["", ""]}
    %10 = kernel.binop "+" %6, %9
    kernel.let "rm" = %10
    %11 = kernel.read "pid_n"
    %12 = kernel.read "BLOCK_N"
    %13 = kernel.binop "*" %11, %12
    %14 = kernel.constant 0 : i64
    %15 = kernel.read "BLOCK_N"
    %16 = kernel.tl_call "arange"(%14, %15) {arg_names = ["", ""]}
    %17 = kernel.binop "+" %13, %16
    kernel.let "rn" = %17
    %18 = kernel.read "rm"
    %19 = kernel.index %18[] {items = [":", "None"]}
    %20 = kernel.read "M"
    %21 = kernel.binop "<" %19, %20
    %22 = kernel.read "rn"
    %23 = kernel.index %22[] {items = ["None", ":"]}
    %24 = kernel.read "N"
    %25 = kernel.binop "<" %23, %24
    %26 = kernel.binop "and" %21, %25
    kernel.let "mask" = %26
    %27 = kernel.read "rm"
    %28 = kernel.index %27[] {items = [":", "None"]}
    %29 = kernel.read "N"
    %30 = kernel.binop "*" %28, %29
    %31 = kernel.read "rn"
    %32 = kernel.index %31[] {items = ["None", ":"]}
    %33 = kernel.binop "+" %30, %32
    kernel.let "offsets" = %33
    %34 = kernel.read "x_ptr"
    %35 = kernel.read "offsets"
    %36 = kernel.binop "+" %34, %35
    %37 = kernel.read "mask"
    %38 = kernel.load(%36, %37) {arg_names = ["", "mask"]}
    kernel.let "x" = %38
    %39 = kernel.read "b_ptr"
    %40 = kernel.read "rn"
    %41 = kernel.binop "+" %39, %40
    %42 = kernel.read "rn"
    %43 = kernel.read "N"
    %44 = kernel.binop "<" %42, %43
    %45 = kernel.load(%41, %44) {arg_names = ["", "mask"]}
    kernel.let "b" = %45
    %46 = kernel.read "x"
    %47 = kernel.read "b"
    %48 = kernel.index %47[] {items = ["None", ":"]}
    %49 = kernel.binop "+" %46, %48
    kernel.let "h" = %49
    %50 = kernel.constant 5.000000e-01 : f64
    %51 = kernel.read "h"
    %52 = kernel.binop "*" %50, %51
    %53 = kernel.constant 1.000000e+00 : f64
    %54 = kernel.read "h"
    %55 = kernel.constant 0.70710678118654757 : f64
    %56 = kernel.binop "*" %54, %55
    %57 = kernel.tl_call "erf"(%56) {arg_names = [""]}
    %58 = kernel.binop "+" %53, %57
    %59 = kernel.binop "*" %52, %58
    kernel.let "y" = %59
    %60 = kernel.read "out_ptr"
    %61 = kernel.read "offsets"
    %62 = kernel.binop "+" %60, %61
    %63 = kernel.read "y"
    %64 = kernel.read "mask"
    kernel.store(%62, %63, %64) {arg_names = ["", "", "mask"]}
  }
  kernel.func @softmax_rows attributes {arg_names = ["x_ptr", "out_ptr", "n_rows", "n_cols", "BLOCK"], param_kinds = ["scalar", "scalar", "scalar", "scalar", "constexpr"], defaults = {}, param_locs = [loc(fused["kernels.tl":20:26, "kernels.tl":20:31]), loc(fused["kernels.tl":20:33, "kernels.tl":20:40]), loc(fused["kernels.tl":20:42, "kernels.tl":20:48]), loc(fused["kernels.tl":20:50, "kernels.tl":20:56]), loc(fused["kernels.tl":20:58, "kernels.tl":20:77])]} {
    %0 = kernel.constant 0 : i64
    %1 = kernel.tl_call "program_id"(%0) {arg_names = ["axis"]}
    kernel.let "row" = %1
    %2 = kernel.constant 0 : i64
    %3 = kernel.read "BLOCK"
    %4 = kernel.tl_call "arange"(%2, %3) {arg_names = ["", ""]}
    kernel.let "cols" = %4
    %5 = kernel.read "cols"
    %6 = kernel.read "n_cols"
    %7 = kernel.binop "<" %5, %6
    %8 = kernel.read "row"
    %9 = kernel.read "n_rows"
    %10 = kernel.binop "<" %8, %9
    %11 = kernel.binop "and" %7, %10
    kernel.let "mask" = %11
    %12 = kernel.read "x_ptr"
    %13 = kernel.read "row"
    %14 = kernel.read "n_cols"
    %15 = kernel.binop "*" %13, %14
    %16 = kernel.binop "+" %12, %15
    %17 = kernel.read "cols"
    %18 = kernel.binop "+" %16, %17
    %19 = kernel.read "mask"
    %20 = kernel.constant "inf"
    %21 = kernel.call "float"(%20) {arg_names = [""]}
    %22 = kernel.unop "-" %21
    %23 = kernel.load(%18, %19, %22) {arg_names = ["", "mask", "other"]}
    kernel.let "x" = %23
    %24 = kernel.read "x"
    %25 = kernel.read "x"
    %26 = kernel.constant 0 : i64
    %27 = kernel.tl_call "max"(%25, %26) {arg_names = ["", "axis"]}
    %28 = kernel.binop "-" %24, %27
    kernel.let "shifted" = %28
    %29 = kernel.read "shifted"
    %30 = kernel.tl_call "exp"(%29) {arg_names = [""]}
    kernel.let "num" = %30
    %31 = kernel.read "num"
    %32 = kernel.read "num"
    %33 = kernel.constant 0 : i64
    %34 = kernel.tl_call "sum"(%32, %33) {arg_names = ["", "axis"]}
    %35 = kernel.binop "/" %31, %34
    kernel.let "y" = %35
    %36 = kernel.read "out_ptr"
    %37 = kernel.read "row"
    %38 = kernel.read "n_cols"
    %39 = kernel.binop "*" %37, %38
    %40 = kernel.binop "+" %36, %39
    %41 = kernel.read "cols"
    %42 = kernel.binop "+" %40, %41
    %43 = kernel.read "y"
    %44 = kernel.read "mask"
    kernel.store(%42, %43, %44) {arg_names = ["", "", "mask"]}
  }
}

// CHECK-LABEL: kernel.func @scaled_add attributes {arg_names = ["x_ptr", "y_ptr", "out_ptr", "n", "alpha", "BLOCK"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "scalar", "constexpr"], defaults = {}, {{.*}}
// CHECK: kernel.launcher @scaled_add_launcher for @scaled_add {bindings = [["input", "x"], ["input", "y"], ["output", "out"], ["numel", "x"], ["scalar", "alpha"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
// CHECK-LABEL: kernel.func @bias_gelu attributes {arg_names = ["x_ptr", "b_ptr", "out_ptr", "M", "N", "BLOCK_M", "BLOCK_N"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "scalar", "constexpr", "constexpr"], defaults = {}, {{.*}}
// CHECK: kernel.launcher @bias_gelu_launcher for @bias_gelu {bindings = [["input", "x"], ["input", "b"], ["output", "out"], ["dim", "x", "0"], ["dim", "x", "1"], ["constexpr", "BLOCK_M"], ["constexpr", "BLOCK_N"]], grid = [["M", "BLOCK_M"], ["N", "BLOCK_N"]], defaults = {BLOCK_M = 32 : i64, BLOCK_N = 32 : i64}, pow2 = ["BLOCK_M", "BLOCK_N"]}
// CHECK-LABEL: kernel.func @softmax_rows attributes {arg_names = ["x_ptr", "out_ptr", "n_rows", "n_cols", "BLOCK"], param_kinds = ["ptr", "ptr", "scalar", "scalar", "constexpr"], defaults = {}, {{.*}}
// CHECK: kernel.launcher @softmax_rows_launcher for @softmax_rows {bindings = [["input", "x"], ["output", "out"], ["dim", "x", "0"], ["dim", "x", "1"], ["constexpr", "BLOCK"]], grid = [["n_rows"]], defaults = {BLOCK = "n_cols"}, pow2 = ["BLOCK"]}
