// kernel ops become py statements and expressions inside triton.jit_func: lets assign, reads name, calls call.
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

// The kernel's variables stay Python names: a let stores into a py.name, a read is one.
// CHECK: builtin.module {
// CHECK-NEXT: triton.jit_func @vector_add attributes {arg_names = ["x_ptr", "y_ptr", "z_ptr", "n", "BLOCK"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "constexpr"]} {
// CHECK-NEXT:   %[[ZERO:.+]] = py.constant 0 : i64
// CHECK-NEXT:   %[[PROGRAM_ID:.+]] = py.name "tl.program_id"
// CHECK-NEXT:   %[[PID_VALUE:.+]] = py.call %[[PROGRAM_ID]](axis = %[[ZERO]])
// CHECK-NEXT:   %[[PID:.+]] = py.name "pid"
// CHECK-NEXT:   py.assign %[[PID]] = %[[PID_VALUE]]
// CHECK-NEXT:   %[[PID_READ:.+]] = py.name "pid"
// CHECK-NEXT:   %[[BLOCK:.+]] = py.name "BLOCK"
// CHECK-NEXT:   %[[START:.+]] = py.binop "*" %[[PID_READ]], %[[BLOCK]]
// CHECK-NEXT:   %[[ZERO2:.+]] = py.constant 0 : i64
// CHECK-NEXT:   %[[BLOCK2:.+]] = py.name "BLOCK"
// CHECK-NEXT:   %[[ARANGE:.+]] = py.name "tl.arange"
// CHECK-NEXT:   %[[RANGE:.+]] = py.call %[[ARANGE]](%[[ZERO2]], %[[BLOCK2]])
// CHECK-NEXT:   %[[OFFSETS_VALUE:.+]] = py.binop "+" %[[START]], %[[RANGE]]
// CHECK-NEXT:   %[[OFFSETS:.+]] = py.name "offsets"
// CHECK-NEXT:   py.assign %[[OFFSETS]] = %[[OFFSETS_VALUE]]
// CHECK-NEXT:   %[[O:.+]] = py.name "offsets"
// CHECK-NEXT:   %[[N:.+]] = py.name "n"
// CHECK-NEXT:   %[[LESS:.+]] = py.compare ["<"] %[[O]], %[[N]]
// CHECK-NEXT:   %[[MASK:.+]] = py.name "mask"
// CHECK-NEXT:   py.assign %[[MASK]] = %[[LESS]]
// CHECK:        %[[LOAD:.+]] = py.name "tl.load"
// CHECK-NEXT:   %[[X_VALUE:.+]] = py.call %[[LOAD]](%{{.+}}, mask = %{{.+}})
// CHECK-NEXT:   %[[X:.+]] = py.name "x"
// CHECK-NEXT:   py.assign %[[X]] = %[[X_VALUE]]
// CHECK:        %[[STORE:.+]] = py.name "tl.store"
// CHECK-NEXT:   %[[STORED:.+]] = py.call %[[STORE]](%{{.+}}, %{{.+}}, mask = %{{.+}})
// CHECK-NEXT:   py.expr %[[STORED]]
// CHECK-NEXT: }
// CHECK-NEXT: triton.launcher @vector_add_launcher for @vector_add {bindings = [["input", "x"], ["input", "y"], ["output", "z"], ["numel", "x"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
// CHECK-NEXT: }
// CHECK-NOT: kernel.
