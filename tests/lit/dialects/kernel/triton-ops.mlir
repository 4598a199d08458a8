// The triton emission ops (jit function, launcher) around a py body, in custom form:
// print, re-parse, and print generic and back.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  triton.jit_func @vector_add attributes {arg_names = ["x_ptr", "y_ptr", "z_ptr", "n", "BLOCK"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "constexpr"]} {
    %0 = py.constant 0 : i64
    %1 = py.name "tl.program_id"
    %2 = py.call %1(axis = %0)
    %3 = py.name "pid"
    py.assign %3 = %2
    %4 = py.name "pid"
    %5 = py.name "BLOCK"
    %6 = py.binop "*" %4, %5
    %7 = py.constant 0 : i64
    %8 = py.name "BLOCK"
    %9 = py.name "tl.arange"
    %10 = py.call %9(%7, %8)
    %11 = py.binop "+" %6, %10
    %12 = py.name "offsets"
    py.assign %12 = %11
    %13 = py.name "offsets"
    %14 = py.name "n"
    %15 = py.compare ["<"] %13, %14
    %16 = py.name "mask"
    py.assign %16 = %15
    %17 = py.name "x_ptr"
    %18 = py.name "offsets"
    %19 = py.binop "+" %17, %18
    %20 = py.name "mask"
    %21 = py.name "tl.load"
    %22 = py.call %21(%19, mask = %20)
    %23 = py.name "x"
    py.assign %23 = %22
    %24 = py.name "y_ptr"
    %25 = py.name "offsets"
    %26 = py.binop "+" %24, %25
    %27 = py.name "mask"
    %28 = py.name "tl.load"
    %29 = py.call %28(%26, mask = %27)
    %30 = py.name "y"
    py.assign %30 = %29
    %31 = py.name "z_ptr"
    %32 = py.name "offsets"
    %33 = py.binop "+" %31, %32
    %34 = py.name "x"
    %35 = py.name "y"
    %36 = py.binop "+" %34, %35
    %37 = py.name "mask"
    %38 = py.name "tl.store"
    %39 = py.call %38(%33, %36, mask = %37)
    py.expr %39
  }
  triton.launcher @vector_add_launcher for @vector_add {bindings = [["input", "x"], ["input", "y"], ["output", "z"], ["numel", "x"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
}

// CHECK: builtin.module {
// CHECK-NEXT:   triton.jit_func @vector_add attributes {arg_names = ["x_ptr", "y_ptr", "z_ptr", "n", "BLOCK"], param_kinds = ["ptr", "ptr", "ptr", "scalar", "constexpr"]} {
// CHECK-NEXT:     %0 = py.constant 0 : i64
// CHECK-NEXT:     %1 = py.name "tl.program_id"
// CHECK-NEXT:     %2 = py.call %1(axis = %0)
// CHECK-NEXT:     %3 = py.name "pid"
// CHECK-NEXT:     py.assign %3 = %2
// CHECK-NEXT:     %4 = py.name "pid"
// CHECK-NEXT:     %5 = py.name "BLOCK"
// CHECK-NEXT:     %6 = py.binop "*" %4, %5
// CHECK-NEXT:     %7 = py.constant 0 : i64
// CHECK-NEXT:     %8 = py.name "BLOCK"
// CHECK-NEXT:     %9 = py.name "tl.arange"
// CHECK-NEXT:     %10 = py.call %9(%7, %8)
// CHECK-NEXT:     %11 = py.binop "+" %6, %10
// CHECK-NEXT:     %12 = py.name "offsets"
// CHECK-NEXT:     py.assign %12 = %11
// CHECK-NEXT:     %13 = py.name "offsets"
// CHECK-NEXT:     %14 = py.name "n"
// CHECK-NEXT:     %15 = py.compare ["<"] %13, %14
// CHECK-NEXT:     %16 = py.name "mask"
// CHECK-NEXT:     py.assign %16 = %15
// CHECK-NEXT:     %17 = py.name "x_ptr"
// CHECK-NEXT:     %18 = py.name "offsets"
// CHECK-NEXT:     %19 = py.binop "+" %17, %18
// CHECK-NEXT:     %20 = py.name "mask"
// CHECK-NEXT:     %21 = py.name "tl.load"
// CHECK-NEXT:     %22 = py.call %21(%19, mask = %20)
// CHECK-NEXT:     %23 = py.name "x"
// CHECK-NEXT:     py.assign %23 = %22
// CHECK-NEXT:     %24 = py.name "y_ptr"
// CHECK-NEXT:     %25 = py.name "offsets"
// CHECK-NEXT:     %26 = py.binop "+" %24, %25
// CHECK-NEXT:     %27 = py.name "mask"
// CHECK-NEXT:     %28 = py.name "tl.load"
// CHECK-NEXT:     %29 = py.call %28(%26, mask = %27)
// CHECK-NEXT:     %30 = py.name "y"
// CHECK-NEXT:     py.assign %30 = %29
// CHECK-NEXT:     %31 = py.name "z_ptr"
// CHECK-NEXT:     %32 = py.name "offsets"
// CHECK-NEXT:     %33 = py.binop "+" %31, %32
// CHECK-NEXT:     %34 = py.name "x"
// CHECK-NEXT:     %35 = py.name "y"
// CHECK-NEXT:     %36 = py.binop "+" %34, %35
// CHECK-NEXT:     %37 = py.name "mask"
// CHECK-NEXT:     %38 = py.name "tl.store"
// CHECK-NEXT:     %39 = py.call %38(%33, %36, mask = %37)
// CHECK-NEXT:     py.expr %39
// CHECK-NEXT:   }
// CHECK-NEXT:   triton.launcher @vector_add_launcher for @vector_add {bindings = [["input", "x"], ["input", "y"], ["output", "z"], ["numel", "x"], ["constexpr", "BLOCK"]], grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}
// CHECK-NEXT: }

// tl-opt prints triton IR as Python too: the printer loads the triton handlers itself.
// RUN: tl-opt %s -t python | filecheck %s --check-prefix=PY
// PY:      @triton.jit
// PY-NEXT: def vector_add(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
// PY-NEXT:     pid = tl.program_id(axis=0)
// PY-NEXT:     offsets = pid * BLOCK + tl.arange(0, BLOCK)
// PY-NEXT:     mask = offsets < n
// PY-NEXT:     x = tl.load(x_ptr + offsets, mask=mask)
// PY-NEXT:     y = tl.load(y_ptr + offsets, mask=mask)
// PY-NEXT:     tl.store(z_ptr + offsets, x + y, mask=mask)
// PY:      def vector_add_launcher(x, y, *, z=None, BLOCK=1024):
