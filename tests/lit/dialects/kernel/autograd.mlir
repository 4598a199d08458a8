// The kernel dialect's optional attributes (annotations, tuning, a backward) round-trip.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  kernel.func @scale_rows attributes {arg_names = ["x_ptr", "s_ptr", "out_ptr", "M", "N", "BLOCK_M", "BLOCK_N"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "scalar", "constexpr", "constexpr"], defaults = {}, param_locs = [loc(fused["pair.tl":2:16, "pair.tl":2:35]), loc(fused["pair.tl":2:37, "pair.tl":2:53]), loc(fused["pair.tl":2:55, "pair.tl":2:76]), loc("pair.tl":2:78), loc("pair.tl":2:81), loc(fused["pair.tl":2:108, "pair.tl":2:116]), loc(fused["pair.tl":2:118, "pair.tl":2:139])], shapes = {x_ptr = ["M", "N"], s_ptr = ["M"], out_ptr = ["M", "N"]}, backward = @scale_rows_bwd, backward_loc = loc(fused["pair.tl":1:18, "pair.tl":1:32]), tune = {BLOCK_M = [16 : i64, 32 : i64], num_warps = [4 : i64, 8 : i64]}} {
    %0 = kernel.constant 0 : i64
    %1 = kernel.tl_call "program_id"(%0) {arg_names = ["axis"]}
    %2 = kernel.read "BLOCK_M"
    %3 = kernel.binop "*" %1, %2
    %4 = kernel.constant 0 : i64
    %5 = kernel.read "BLOCK_M"
    %6 = kernel.tl_call "arange"(%4, %5) {arg_names = ["", ""]}
    %7 = kernel.binop "+" %3, %6
    kernel.let "rows" = %7
    %8 = kernel.constant 0 : i64
    %9 = kernel.read "BLOCK_N"
    %10 = kernel.tl_call "arange"(%8, %9) {arg_names = ["", ""]}
    kernel.let "cols" = %10
    %11 = kernel.read "rows"
    %12 = kernel.index %11[] {items = [":", "None"]}
    %13 = kernel.read "M"
    %14 = kernel.binop "<" %12, %13
    %15 = kernel.read "cols"
    %16 = kernel.index %15[] {items = ["None", ":"]}
    %17 = kernel.read "N"
    %18 = kernel.binop "<" %16, %17
    %19 = kernel.binop "and" %14, %18
    kernel.let "mask" = %19
    %20 = kernel.read "x_ptr"
    %21 = kernel.read "rows"
    %22 = kernel.index %21[] {items = [":", "None"]}
    %23 = kernel.read "N"
    %24 = kernel.binop "*" %22, %23
    %25 = kernel.binop "+" %20, %24
    %26 = kernel.read "cols"
    %27 = kernel.index %26[] {items = ["None", ":"]}
    %28 = kernel.binop "+" %25, %27
    %29 = kernel.read "mask"
    %30 = kernel.load(%28, %29) {arg_names = ["", "mask"]}
    kernel.let "x" = %30
    %31 = kernel.read "s_ptr"
    %32 = kernel.read "rows"
    %33 = kernel.binop "+" %31, %32
    %34 = kernel.read "rows"
    %35 = kernel.read "M"
    %36 = kernel.binop "<" %34, %35
    %37 = kernel.load(%33, %36) {arg_names = ["", "mask"]}
    kernel.let "s" = %37
    %38 = kernel.read "out_ptr"
    %39 = kernel.read "rows"
    %40 = kernel.index %39[] {items = [":", "None"]}
    %41 = kernel.read "N"
    %42 = kernel.binop "*" %40, %41
    %43 = kernel.binop "+" %38, %42
    %44 = kernel.read "cols"
    %45 = kernel.index %44[] {items = ["None", ":"]}
    %46 = kernel.binop "+" %43, %45
    %47 = kernel.read "x"
    %48 = kernel.read "s"
    %49 = kernel.index %48[] {items = [":", "None"]}
    %50 = kernel.binop "*" %47, %49
    %51 = kernel.read "mask"
    kernel.store(%46, %50, %51) {arg_names = ["", "", "mask"]}
  }
  kernel.launcher @scale_rows_launcher for @scale_rows {bindings = [["input", "x"], ["input", "s"], ["output", "out"], ["dim", "x", "0"], ["dim", "x", "1"], ["constexpr", "BLOCK_M"], ["constexpr", "BLOCK_N"]], grid = [["M", "BLOCK_M"]], defaults = {BLOCK_N = "N"}, pow2 = ["BLOCK_N"], allocations = {x = ["M", "N"], s = ["M"], out = ["M", "N"]}, tune = {BLOCK_M = [16 : i64, 32 : i64], num_warps = [4 : i64, 8 : i64]}, tune_key = ["M", "N"], backward = @scale_rows_bwd, backward_args = [["grad", "out"], ["saved", "x"], ["saved", "s"]], backward_results = [["dx", "x"], ["ds", "s"]], entry = "scale_rows_op"}
  kernel.func @scale_rows_bwd attributes {arg_names = ["dout_ptr", "x_ptr", "s_ptr", "dx_ptr", "ds_ptr", "M", "N", "BLOCK_M", "BLOCK_N"], param_kinds = ["ptr", "ptr", "ptr", "ptr", "ptr", "scalar", "scalar", "constexpr", "constexpr"], defaults = {BLOCK_M = 16 : i64}, param_locs = [loc(fused["pair.tl":11:20, "pair.tl":11:42]), loc(fused["pair.tl":11:44, "pair.tl":11:63]), loc(fused["pair.tl":11:65, "pair.tl":11:81]), loc(fused["pair.tl":11:83, "pair.tl":11:103]), loc(fused["pair.tl":11:105, "pair.tl":11:123]), loc("pair.tl":11:125), loc("pair.tl":11:128), loc(fused["pair.tl":11:155, "pair.tl":11:157]), loc(fused["pair.tl":11:159, "pair.tl":11:180])], shapes = {dout_ptr = ["M", "N"], x_ptr = ["M", "N"], s_ptr = ["M"], dx_ptr = ["M", "N"], ds_ptr = ["M"]}, types = {ds_ptr = "float32"}} {
    %0 = kernel.constant 0 : i64
    %1 = kernel.tl_call "program_id"(%0) {arg_names = ["axis"]}
    %2 = kernel.read "BLOCK_M"
    %3 = kernel.binop "*" %1, %2
    %4 = kernel.constant 0 : i64
    %5 = kernel.read "BLOCK_M"
    %6 = kernel.tl_call "arange"(%4, %5) {arg_names = ["", ""]}
    %7 = kernel.binop "+" %3, %6
    kernel.let "rows" = %7
    %8 = kernel.constant 0 : i64
    %9 = kernel.read "BLOCK_N"
    %10 = kernel.tl_call "arange"(%8, %9) {arg_names = ["", ""]}
    kernel.let "cols" = %10
    %11 = kernel.read "rows"
    %12 = kernel.index %11[] {items = [":", "None"]}
    %13 = kernel.read "M"
    %14 = kernel.binop "<" %12, %13
    %15 = kernel.read "cols"
    %16 = kernel.index %15[] {items = ["None", ":"]}
    %17 = kernel.read "N"
    %18 = kernel.binop "<" %16, %17
    %19 = kernel.binop "and" %14, %18
    kernel.let "mask" = %19
    %20 = kernel.read "dout_ptr"
    %21 = kernel.read "rows"
    %22 = kernel.index %21[] {items = [":", "None"]}
    %23 = kernel.read "N"
    %24 = kernel.binop "*" %22, %23
    %25 = kernel.binop "+" %20, %24
    %26 = kernel.read "cols"
    %27 = kernel.index %26[] {items = ["None", ":"]}
    %28 = kernel.binop "+" %25, %27
    %29 = kernel.read "mask"
    %30 = kernel.constant 0.000000e+00 : f64
    %31 = kernel.load(%28, %29, %30) {arg_names = ["", "mask", "other"]}
    kernel.let "dout" = %31
    %32 = kernel.read "x_ptr"
    %33 = kernel.read "rows"
    %34 = kernel.index %33[] {items = [":", "None"]}
    %35 = kernel.read "N"
    %36 = kernel.binop "*" %34, %35
    %37 = kernel.binop "+" %32, %36
    %38 = kernel.read "cols"
    %39 = kernel.index %38[] {items = ["None", ":"]}
    %40 = kernel.binop "+" %37, %39
    %41 = kernel.read "mask"
    %42 = kernel.constant 0.000000e+00 : f64
    %43 = kernel.load(%40, %41, %42) {arg_names = ["", "mask", "other"]}
    kernel.let "x" = %43
    %44 = kernel.read "s_ptr"
    %45 = kernel.read "rows"
    %46 = kernel.binop "+" %44, %45
    %47 = kernel.read "rows"
    %48 = kernel.read "M"
    %49 = kernel.binop "<" %47, %48
    %50 = kernel.load(%46, %49) {arg_names = ["", "mask"]}
    kernel.let "s" = %50
    %51 = kernel.read "dx_ptr"
    %52 = kernel.read "rows"
    %53 = kernel.index %52[] {items = [":", "None"]}
    %54 = kernel.read "N"
    %55 = kernel.binop "*" %53, %54
    %56 = kernel.binop "+" %51, %55
    %57 = kernel.read "cols"
    %58 = kernel.index %57[] {items = ["None", ":"]}
    %59 = kernel.binop "+" %56, %58
    %60 = kernel.read "dout"
    %61 = kernel.read "s"
    %62 = kernel.index %61[] {items = [":", "None"]}
    %63 = kernel.binop "*" %60, %62
    %64 = kernel.read "mask"
    kernel.store(%59, %63, %64) {arg_names = ["", "", "mask"]}
    %65 = kernel.read "ds_ptr"
    %66 = kernel.read "rows"
    %67 = kernel.binop "+" %65, %66
    %68 = kernel.read "dout"
    %69 = kernel.read "x"
    %70 = kernel.binop "*" %68, %69
    %71 = kernel.constant 1 : i64
    %72 = kernel.tl_call "sum"(%70, %71) {arg_names = ["", "axis"]}
    %73 = kernel.read "rows"
    %74 = kernel.read "M"
    %75 = kernel.binop "<" %73, %74
    %76 = kernel.tl_call "atomic_add"(%67, %72, %75) {arg_names = ["", "", "mask"]}
  }
  kernel.launcher @scale_rows_bwd_launcher for @scale_rows_bwd {bindings = [["input", "dout"], ["input", "x"], ["input", "s"], ["output", "dx"], ["accumulator", "ds"], ["dim", "dout", "0"], ["dim", "dout", "1"], ["constexpr", "BLOCK_M"], ["constexpr", "BLOCK_N"]], grid = [["M", "BLOCK_M"]], defaults = {BLOCK_M = 16 : i64, BLOCK_N = "N"}, pow2 = ["BLOCK_M", "BLOCK_N"], allocations = {dout = ["M", "N"], x = ["M", "N"], s = ["M"], dx = ["M", "N"], ds = ["M"]}, dtypes = {ds = "float32"}, entry = "scale_rows_bwd_op"}
}

// CHECK: kernel.func @scale_rows attributes {arg_names = ["x_ptr", "s_ptr", "out_ptr", "M", "N", "BLOCK_M", "BLOCK_N"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "scalar", "constexpr", "constexpr"], defaults = {}, param_locs = {{.*}}, shapes = {x_ptr = ["M", "N"], s_ptr = ["M"], out_ptr = ["M", "N"]}, backward = @scale_rows_bwd, backward_loc = loc(fused["pair.tl":1:18, "pair.tl":1:32]), tune = {BLOCK_M = [16 : i64, 32 : i64], num_warps = [4 : i64, 8 : i64]}} {
// CHECK: kernel.launcher @scale_rows_launcher for @scale_rows {bindings = [["input", "x"], ["input", "s"], ["output", "out"], ["dim", "x", "0"], ["dim", "x", "1"], ["constexpr", "BLOCK_M"], ["constexpr", "BLOCK_N"]], grid = [["M", "BLOCK_M"]], defaults = {BLOCK_N = "N"}, pow2 = ["BLOCK_N"], allocations = {x = ["M", "N"], s = ["M"], out = ["M", "N"]}, tune = {BLOCK_M = [16 : i64, 32 : i64], num_warps = [4 : i64, 8 : i64]}, tune_key = ["M", "N"], backward = @scale_rows_bwd, backward_args = [["grad", "out"], ["saved", "x"], ["saved", "s"]], backward_results = [["dx", "x"], ["ds", "s"]], entry = "scale_rows_op"}
// CHECK: kernel.func @scale_rows_bwd attributes {arg_names = ["dout_ptr", "x_ptr", "s_ptr", "dx_ptr", "ds_ptr", "M", "N", "BLOCK_M", "BLOCK_N"], param_kinds = ["ptr", "ptr", "ptr", "ptr", "ptr", "scalar", "scalar", "constexpr", "constexpr"], defaults = {BLOCK_M = 16 : i64}, param_locs = {{.*}}, shapes = {dout_ptr = ["M", "N"], x_ptr = ["M", "N"], s_ptr = ["M"], dx_ptr = ["M", "N"], ds_ptr = ["M"]}, types = {ds_ptr = "float32"}} {
// CHECK: kernel.launcher @scale_rows_bwd_launcher for @scale_rows_bwd {bindings = [["input", "dout"], ["input", "x"], ["input", "s"], ["output", "dx"], ["accumulator", "ds"], ["dim", "dout", "0"], ["dim", "dout", "1"], ["constexpr", "BLOCK_M"], ["constexpr", "BLOCK_N"]], grid = [["M", "BLOCK_M"]], defaults = {BLOCK_M = 16 : i64, BLOCK_N = "N"}, pow2 = ["BLOCK_M", "BLOCK_N"], allocations = {dout = ["M", "N"], x = ["M", "N"], s = ["M"], dx = ["M", "N"], ds = ["M"]}, dtypes = {ds = "float32"}, entry = "scale_rows_bwd_op"}
