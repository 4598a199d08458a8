"""`Sequential(...)` holding a model of the program becomes a nested model of its own.

    @model ResNet:                        @model "ResNet.layer1:Sequential":   (hidden)
        @config:                              @config:
            w = 64                                w = 64
        @layers:                              @layers:
            layer1 = Sequential(      ->          0 = Bottleneck(w, w, 1, true)
                Bottleneck(w, w, 1, true),        1 = Bottleneck(4 * w, w)
                Bottleneck(4 * w, w))         @forward(x):
                                                  x = 0(x)
                                                  x = 1(x)
                                                  return x
    and in ResNet: layer1 = "ResNet.layer1:Sequential"(w=w)

A catalogue-only `Sequential` stays a catalogue layer. One that holds a model is
checked, counted and traced as any nested model is: each element is a layer named by
its position, as `nn.Sequential` names it (`layer1.0.conv1.weight`), bound under the
configuration of the model that holds it (its configs are passed on by name, and a
layer list's loop variable too). The hidden model is marked `sequential` in the IR
(docs/ir.md); the script builds no class for it: the holding layer is
`nn.Sequential(Bottleneck(w, w, 1, True), Bottleneck(4 * w, w))`.
"""

from __future__ import annotations

from dataclasses import replace

from tensorloom.catalogue.layers import lookup
from tensorloom.frontend import ast
from tensorloom.frontend.irgen_attrs import dotted_name

SEQUENTIAL = "Sequential"
INPUT = "x"


def hidden_name(model: str, layer: str) -> str:
    """The hidden model's name: never a name a program can write."""
    return f"{model}.{layer}:{SEQUENTIAL}"


def hoist_sequentials(
    decl: ast.ModelDecl, aliases: dict[str, str]
) -> tuple[ast.ModelDecl, list[ast.ModelDecl]]:
    """`decl` with each `Sequential` that holds a model replaced by a call of a hidden
    model, and those hidden models."""
    hidden: list[ast.ModelDecl] = []
    layers: list[ast.LayerDecl] = []
    for layer in decl.layers:
        call, var = _sequential_of(layer.ctor)
        if call is None or not _holds_a_model(call, aliases):
            layers.append(layer)
            continue
        model = _hidden_model(decl, layer, call, var)
        hidden.append(model)
        layers.append(replace(layer, ctor=_rebuilt(layer.ctor, _holder_call(model, call))))
    if not hidden:
        return decl, []
    return replace(decl, layers=layers), hidden


def _sequential_of(ctor: ast.Expr) -> tuple[ast.Call | None, ast.ListComp | None]:
    """The `Sequential(...)` call a layer builds (a list's element too), and the list."""
    comp = ctor if isinstance(ctor, ast.ListComp) else None
    element = comp.elt if comp is not None else ctor
    if isinstance(element, ast.Call) and dotted_name(element.func) == SEQUENTIAL:
        return element, comp
    return None, None


def _holds_a_model(call: ast.Call, aliases: dict[str, str]) -> bool:
    """Whether an element names no catalogue layer (a model of the program, or an
    unknown name, which resolve-nml reports at the element)."""
    for element in call.args:
        func = element.func if isinstance(element, ast.Call) else element
        name = dotted_name(func)
        if name is not None and lookup(aliases.get(name, name)) is None:
            return True
    return False


def _hidden_model(
    decl: ast.ModelDecl, layer: ast.LayerDecl, call: ast.Call, comp: ast.ListComp | None
) -> ast.ModelDecl:
    span = call.span
    config = list(decl.config)
    if comp is not None and comp.var != "_":  # `[Sequential(Block(i)) for i in range(n)]`
        config.append(ast.ConfigEntry(comp.var_span, comp.var, comp.var_span, _first(comp)))
    layers = [
        ast.LayerDecl(element.span, str(position), element.span, element)
        for position, element in enumerate(call.args)
    ]
    x = ast.Name(span, INPUT)
    body: list[ast.Stmt] = [  # each application at its element: errors point there
        ast.AssignStmt(e.span, x, ast.Call(e.span, ast.Name(e.span, e.name), [x])) for e in layers
    ]
    body.append(ast.ReturnStmt(span, x))
    forward = ast.FnDecl(span, "forward", span, [ast.Param(span, INPUT)], None, body)
    name = hidden_name(decl.name, layer.name)
    return ast.ModelDecl(span, name, layer.name_span, "nml", config, layers, [forward])


def _first(comp: ast.ListComp) -> ast.Expr:
    """The loop variable's value at the first position, the hidden model's default."""
    span = comp.var_span
    if isinstance(comp.iter, ast.Call):  # `range(n)`
        return ast.IntLit(span, 0)
    return ast.Index(span, comp.iter, [ast.IntLit(span, 0)])


def _holder_call(model: ast.ModelDecl, call: ast.Call) -> ast.Call:
    """`"M.layer:Sequential"(d=d, ...)`: the holder's configs passed on by name."""
    span = call.span
    kwargs = [ast.Keyword(span, c.name, ast.Name(span, c.name)) for c in model.config]
    return ast.Call(span, ast.Name(call.func.span, model.name), [], kwargs)


def _rebuilt(ctor: ast.Expr, call: ast.Call) -> ast.Expr:
    if isinstance(ctor, ast.ListComp):
        return replace(ctor, elt=call)
    return call
