// Each verifier message of the py dialect, one case per split.
// RUN: tl-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

%f = py.name "f"
%x = py.name "x"
%0 = py.call %f(key = %x, %x)
// CHECK: py.call: a positional argument follows a keyword

// -----

%f = py.name "f"
%x = py.name "x"
%0 = py.call %f(key = %x, key = %x)
// CHECK: py.call: a keyword argument is repeated

// -----

%0 = py.name "class"
// CHECK: name `class` is not a Python identifier

// -----

%x = py.name "x"
%0 = py.binop "<" %x, %x
// CHECK: py.binop: unknown operator `<`

// -----

%x = py.name "x"
%0 = py.compare ["<"] %x
// CHECK: py.compare: one operator between each two operands

// -----

%x = py.name "x"
%0 = py.compare ["=<"] %x, %x
// CHECK: py.compare: unknown operator `=<`

// -----

%x = py.name "x"
%0 = py.unop "!" %x
// CHECK: py.unop: unknown operator `!`

// -----

%c = py.constant 1 : i64
%x = py.name "x"
py.assign %c = %x
// CHECK: py.assign: the target is a `py.constant`; expected a py.name, py.attribute, py.subscript or a py.tuple of them

// -----

%x = py.name "torch.x"
%c = py.constant 1 : i64
py.assign %x = %c
// CHECK: py.assign: cannot assign to the dotted name `torch.x`

// -----

%x = py.name "x"
py.assign %x
// CHECK: py.assign needs a value or an annotation

// -----

%x = py.name "x"
%c = py.constant 1 : i64
py.augassign "=+" %x, %c
// CHECK: py.augassign: unknown operator `=+`

// -----

py.break
// CHECK: py.break outside a loop

// -----

%c = py.constant 1 : i64
py.def @f(x = %c, y) {
^bb0(%x : !py.object, %y : !py.object):
  py.return
}
// CHECK: py.def: a parameter without a default follows one with

// -----

py.def @f(x, x) {
^bb0(%a : !py.object, %b : !py.object):
  py.return
}
// CHECK: py.def: parameter `x` is repeated

// -----

py.def @f(x) {
^bb0(%a : !py.object, %b : !py.object):
  py.return
}
// CHECK: py.def: 1 parameters but 2 block arguments

// -----

py.def @import(x) {
^bb0(%a : !py.object):
  py.return
}
// CHECK: function name `import` is not a Python identifier

// -----

%x = py.name "x"
%r = py.for %x iter_args(%x) -> !py.object {
^bb0(%i : !py.object, %a : !py.object):
  py.pass
}
// CHECK: py.for: a body that gives 1 values ends in py.yield

// -----

%x = py.name "x"
py.for %x {
^bb0(%i : !py.object, %a : !py.object):
  py.pass
}
// CHECK: py.for: 1 loop variables and 0 carried values, but 2 block arguments

// -----

%x = py.name "x"
py.for %x attributes {targets = 2 : i64, unpack} {
^bb0(%i : !py.object, %j : !py.object):
  py.pass
}
// CHECK: py.for: `unpack` is for one loop variable (a 1-tuple)

// -----

%x = py.name "x"
%r = py.if %x -> (!py.object) {
  py.yield %x, %x
} else {
  py.yield %x
}
// CHECK: py.if: py.yield gives 2 values, the op has 1 results

// -----

py.while {
  py.pass
} do {
  py.pass
}
// CHECK: py.while: the condition region ends in py.condition

// -----

py.try {
  py.pass
}
// CHECK: py.try needs a handler or a finally

// -----

%x = py.name "x"
%s = py.fstring "{} and {}" (%x)
// CHECK: py.fstring: 2 fields but 1 values

// -----

%x = py.name "x"
%s = py.fstring "{name}" (%x)
// CHECK: py.fstring: a field names `name`

// -----

%c = py.constant [1 : i64]
// CHECK: py.constant cannot hold [1 : i64]

// -----

%x = py.name "x"
py.raise from %x
// CHECK: py.raise: `from` needs an exception

// -----

%x = py.name "x"
%l = py.lambda (y) {
^bb0(%y : !py.object):
  py.pass
}
// CHECK: Operation py.pass terminates block in single-block region but is not a terminator

// -----

%items = py.name "items"
%0 = py.comprehension "dict" %items {
^bb0(%b : !py.object):
  py.yield %b
}
// CHECK: py.comprehension: the body yields a key and a value (and a filter)

// -----

%x = py.name "x"
%c = py.constant 1 : i64
py.assign %x = %c comment "two\0Alines"
// CHECK: py.assign: its comment is one line
