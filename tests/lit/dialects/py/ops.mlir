// Every py op in its custom form: print, re-parse, and print generic and back.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | tl-opt | filecheck %s
// RUN: tl-opt %s > %t.custom && tl-opt %s --print-op-generic | tl-opt > %t.roundtrip && diff %t.custom %t.roundtrip

builtin.module {
  py.module from "prog.tl" {
    py.import "torch"
    py.import "torch.nn.functional" as "F"
    py.from_import "dataclasses" ["dataclass", "field"]
    %dataclass = py.name "dataclass"
    %int = py.name "int"
    %zero = py.constant 0 : i64
    py.class @Counter() decorators [%dataclass] {
      %doc = py.constant "Counts steps."
      py.expr %doc
      %step = py.name "step"
      py.assign %step : %int = %zero
    }
    py.comment "A paragraph:\0A\0Aits lines."
    %epochs = py.name "EPOCHS"
    py.assign %epochs = %zero comment "the train block's"
    %two = py.constant 2 : i64
    %float = py.name "float"
    py.def @scale(x, factor : %float = %two, *, bias = %zero, **options) -> %float {
    ^bb0(%x : !py.object, %factor : !py.object, %bias : !py.object, %options : !py.object):
      %0 = py.binop "*" %x, %factor
      %1 = py.binop "+" %0, %bias
      py.return %1
    }
    py.def @rest(*args, key) {
    ^bb0(%args : !py.object, %key : !py.object):
      %print = py.name "print"
      %n = py.constant #py.none
      %e = py.constant #py.ellipsis
      %t = py.constant true
      %s = py.constant "a"
      %c = py.call %print(%s, *%args, sep = %s, **%key)
      %sl = py.slice lower %zero step %two
      %all = py.slice
      %i = py.subscript %args[%e, %sl, %all]
      %a = py.attribute %i, "shape"
      %neg = py.unop "-" %a
      %cmp = py.compare ["<", "is not"] %zero, %neg, %n
      %if = py.ifexp %s if %cmp else %t
      %tu = py.tuple [%if, %neg]
      %l = py.list []
      %d = py.dict {%s : %tu, ** : %key}
      %f = py.fstring "loss {:.4f} at {!r}, {{braces}}" (%a, %s)
      %lam = py.lambda (y) {
      ^bb0(%y : !py.object):
        %y1 = py.binop "+" %y, %two
        py.return %y1
      }
      %comp = py.comprehension "list" %args {
      ^bb0(%b : !py.object):
        %b1 = py.attribute %b, "real"
        py.yield %b1, %t
      }
      %pairs = py.comprehension "dict" %args {
      ^bb0(%b : !py.object):
        %b2 = py.attribute %b, "imag"
        py.yield %b, %b2, %t
      }
      %target = py.name "total"
      py.assign %target = %zero
      py.augassign "+=" %target, %two
      %k = py.name "k"
      %v = py.name "v"
      %kv = py.tuple [%k, %v]
      %items = py.attribute %d, "items"
      %it = py.call %items()
      py.assign %kv = %it
      %r = py.for %args iter_args(%zero) -> !py.object {
      ^bb1(%item : !py.object, %acc : !py.object):
        %acc1 = py.binop "+" %acc, %item
        py.if %t {
          py.break
        } else {
          py.continue
        }
        py.yield %acc1
      }
      py.for %it attributes {targets = 2 : i64} {
      ^bb2(%kk : !py.object, %vv : !py.object):
        py.pass
      }
      py.for %it attributes {unpack} {
      ^bb5(%only : !py.object):
        py.pass
      }
      py.while {
        %lt = py.compare ["<"] %zero, %two
        py.condition %lt
      } do {
        py.break
      }
      %nograd = py.name "torch.no_grad"
      %ng = py.call %nograd()
      py.with %ng {
        py.pass
      }
      %open = py.name "open"
      %fh = py.call %open(%s)
      py.with %fh {
      ^bb3(%handle : !py.object):
        %read = py.attribute %handle, "read"
        %rd = py.call %read()
        py.expr %rd
      }
      %err = py.name "ValueError"
      %key_error = py.name "KeyError"
      py.try {
        %x = py.if %t -> (!py.object) {
          py.yield %zero
        } else {
          py.yield %two
        }
        py.expr %x
      } except [%err, %key_error] {
      ^bb4(%e1 : !py.object):
        py.raise %err from %e1
      } {
        py.raise
      } else {
        py.pass
      } finally {
        py.pass
      }
      py.return %lam, %comp, %f, %l
    }
  }
}

// CHECK:      py.module from "prog.tl" {
// CHECK-NEXT:   py.import "torch"
// CHECK-NEXT:   py.import "torch.nn.functional" as "F"
// CHECK-NEXT:   py.from_import "dataclasses" ["dataclass", "field"]
// CHECK:        py.class @Counter() decorators [%{{.*}}] {
// CHECK:          py.assign %{{.*}} : %{{.*}} = %{{.*}}
// CHECK:        py.comment "A paragraph:\0A\0Aits lines."
// CHECK:        py.assign %{{.*}} = %{{.*}} comment "the train block's"
// CHECK:        py.def @scale(x, factor : %{{.*}} = %{{.*}}, *, bias = %{{.*}}, **options) -> %{{.*}} {
// CHECK:        py.def @rest(*args, key) {
// CHECK:          py.call %{{.*}}(%{{.*}}, *%{{.*}}, sep = %{{.*}}, **%{{.*}})
// CHECK:          py.slice lower %{{.*}} step %{{.*}}
// CHECK:          py.compare ["<", "is not"]
// CHECK:          py.dict {%{{.*}} : %{{.*}}, ** : %{{.*}}}
// CHECK:          py.fstring "loss {:.4f} at {!r}, {{[{][{]}}braces{{[}][}]}}"
// CHECK:          py.lambda (y) {
// CHECK:          py.comprehension "list"
// CHECK:          py.comprehension "dict" %{{.*}} {
// CHECK-NEXT:     ^{{.*}}(%{{.*}}: !py.object):
// CHECK-NEXT:       %{{.*}} = py.attribute %{{.*}}, "imag"
// CHECK-NEXT:       py.yield %{{.*}}, %{{.*}}, %{{.*}}
// CHECK:          py.augassign "+=" %{{.*}}, %{{.*}}
// CHECK:          py.for %{{.*}} iter_args(%{{.*}}) -> !py.object {
// CHECK:          py.for %{{.*}} attributes {unpack} {
// CHECK:          py.while {
// CHECK:          } do {
// CHECK:          py.with
// CHECK:          py.try {
// CHECK:          } except [%{{.*}}, %{{.*}}] {
// CHECK:          py.raise %{{.*}} from %{{.*}}
// CHECK:          } finally {
