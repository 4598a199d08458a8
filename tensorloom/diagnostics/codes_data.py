"""Every diagnostic code: what it means and an example, the registry of record.

`tlc explain CODE` prints one entry, and docs/diagnostics.md is generated from
this file (`python -m tensorloom.diagnostics.codes`; a test checks the page is in
step and that every code the compiler reports is listed here). Add a code here,
then regenerate the page. Each `Code` is (code, title, explanation, example);
`more` is markdown after the example (a second case).
"""

# ruff: noqa: E501  (prose and example lines are the page's; they are not wrapped)

from tensorloom.diagnostics.codes import Code, Section

TITLE = "Diagnostics"
PREAMBLE = """\
Every code TensorLoom reports, with an example. Codes by range: TL00xx lexical,
TL01xx syntax, TL02xx shapes, TL03xx names/scope, TL04xx config/train settings,
TL05xx kernels, TL06xx imports/files, TL07xx datasets, TL09xx internal.
`tlc explain CODE` prints one entry. This page is generated from the registry in
`tensorloom/diagnostics/codes_data.py`: edit that, then run
`python -m tensorloom.diagnostics.codes > docs/diagnostics.md`.
"""

SECTIONS: tuple[Section, ...] = (
    Section('TL00xx: lexical (the lexer, `tensorloom/frontend/lexer.py`)', '', (
        Code(
            'TL0001',
            'an unterminated string',
            """\
A string ends at the end of its line; the error points at the opening quote.
""",
            """\
error[TL0001]: unterminated string
 --> s.tl:1:12
  |
1 | let name = "mnist
  |            ^ string starts here
  |
  = help: close it with `"` on the same line
""",
        ),
        Code(
            'TL0002',
            'an unterminated block comment',
            """\
The comment runs to the end of the file; the error points at its `/*`.
""",
            """\
error[TL0002]: unterminated block comment
 --> c.tl:2:1
  |
2 | /* notes
  | ^^ comment starts here
  |
  = help: close it with `*/`
""",
        ),
        Code(
            'TL0003',
            'indentation that mixes tabs and spaces',
            """\
The first indented line fixes the file's indentation character (tab or space); a line that uses the other one is reported at the first odd character. A tab counts as 4 columns when the lexer carries on.
""",
            """\
error[TL0003]: indentation mixes tabs and spaces
 --> t.tl:3:1
  |
3 |  layer fc2 = Linear(8, 2)
  | ^
  |
  = help: this file indents with spaces; use spaces here too
""",
        ),
        Code(
            'TL0004',
            'an unindent that matches no outer block',
            """\
A line indented less than its block but more than the enclosing one. The lexer keeps the line in the inner block, so the lines after it are not reported again.
""",
            """\
error[TL0004]: unindent does not match any outer indentation level
 --> d.tl:4:7
  |
4 |       return y
  |       ^ this line is indented 6 columns
  |
  = note: the enclosing blocks are indented 0, 4, 8 columns
""",
        ),
        Code(
            'TL0005',
            'an unknown character',
            """\
The character is skipped. `#` gets the hint that comments start with `//`; `!`, `|` and `&` point to `!=`/`not`, `|>` and `and`.
""",
            """\
error[TL0005]: unknown character `$`
 --> u.tl:1:11
  |
1 | let x = 3 $ 4
  |           ^
""",
        ),
        Code(
            'TL0006',
            'an invalid number literal',
            """\
A number directly followed by letters, such as `12abc` or an exponent without digits.
""",
            """\
error[TL0006]: invalid number literal `1e`
 --> n.tl:1:10
  |
1 | let lr = 1e
  |          ^^
  |
  = help: write numbers as `42`, `0.5` or `1e-4`
""",
        ),
        Code(
            'TL0007',
            'an unknown escape sequence in a string',
            'The known escapes are `\\n`, `\\t`, `\\r`, `\\0`, `\\\\`, `\\\'` and `\\"`.\n',
            'error[TL0007]: unknown escape sequence `\\d`\n --> e.tl:1:15\n  |\n1 | let path = "C:\\data"\n  |               ^^\n  |\n  = help: the escapes are `\\n`, `\\t`, `\\r`, `\\0`, `\\\\`, `\\\'` and `\\"`\n',
        ),
        Code(
            'TL0008',
            'a number literal out of range',
            """\
Every integer in the IR is a signed 64-bit value, so an integer literal past 9,223,372,036,854,775,807 is an error (a literal of any length, thousands of digits included); so is a float literal past about `1.8e308`, which would be infinite.
""",
            """\
error[TL0008]: integer literal `9223372036854775808` is out of range
 --> n.tl:1:9
  |
1 | let d = 9223372036854775808
  |         ^^^^^^^^^^^^^^^^^^^
  |
  = note: the largest integer is 9,223,372,036,854,775,807
""",
        ),
        Code(
            'TL0009',
            'a name that Python cannot take',
            """\
Names are read as Python reads identifiers: NFKC-normalised (`\ufb01` is `fi`, so `layer \ufb01` and `layer fi` are one name, TL0309). A name that is not a Python identifier after that, or is one of Python's keywords (`class`, `lambda`, `None`, ...), is an error: the compiled script is Python.
""",
            """\
error[TL0009]: `class` is a Python keyword, so it cannot be a name
 --> k.tl:2:11
  |
2 |     layer class = Linear(4, 2)
  |           ^^^^^
  |
  = help: the compiled script is Python: choose another name
""",
        ),
    )),
    Section('TL01xx: syntax (the parser, `tensorloom/frontend/parser.py`)', '', (
        Code(
            'TL0101',
            'an unexpected token',
            """\
The general syntax error: what the parser expected, and the token it found. After it, the parser skips to the next line (and the block that line opens) and carries on, so every syntax error in the file is reported in one run. Also reported for a top-level `fn` whose first parameter is `self`: a method outside its model (a top-level `fn` is a loss or metric, without `self`).
""",
            """\
error[TL0101]: expected `,` or `)`, found `10`
 --> x.tl:1:26
  |
1 | let net = Classifier(784 10)
  |                          ^^ expected `,` or `)`
 ::: x.tl:1:21
1 | let net = Classifier(784 10)
  |                     - to close this `(`
""",
        ),
        Code(
            'TL0102',
            'a bracket that is never closed',
            """\
Newlines inside brackets are ignored, so a missing closer would swallow the following lines; a line that can only start a statement (`let`, `fn`, `return`, `model Name`, `@kernel`, ...) ends the bracket, and the error points at the bracket that was opened.
""",
            """\
error[TL0102]: unclosed `(`
 --> b.tl:1:17
  |
1 | let net = Linear(784,
  |                 ^ this `(` is never closed
  |
  = help: add `)`
""",
        ),
        Code(
            'TL0103',
            'a block header without its `:`',
            """\
Reported at the end of the header line (after its last token, before any comment); the block below is still parsed.
""",
            """\
error[TL0103]: expected `:` at the end of this line
 --> h.tl:1:17
  |
1 | model Classifier
  |                 ^ add `:` here
""",
        ),
        Code(
            'TL0104',
            'an unexpected indent',
            """\
A line indented deeper than the block it is in. The indented lines are skipped.
""",
            """\
error[TL0104]: unexpected indent
 --> i.tl:2:1
  |
2 |     let y = 2
  | ^^^^ this line is indented too far
  |
  = help: remove the extra indentation
""",
        ),
        Code(
            'TL0105',
            'a block header with no indented block',
            """\
A header ending in `:` must be followed by an indented block.
""",
            """\
error[TL0105]: expected an indented block after this line
 --> k.tl:1:11
  |
1 | model Net:
  |           ^ the block is missing
  |
  = help: indent the lines that belong to this block
""",
        ),
        Code(
            'TL0106',
            'nesting deeper than 200 levels',
            """\
Expressions and blocks may nest 200 levels deep; beyond that the parser stops the statement with this error instead of running out of stack.
""",
            """\
error[TL0106]: nesting is too deep (the limit is 200 levels)
 --> deep.tl:1:209
  |
1 | let x = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((...
  |         (the quoted line is the whole source line; the caret sits under the 201st `(`)
  |
  = help: split the expression with `let` bindings
""",
        ),
        Code(
            'TL0107',
            'an unknown .nml section',
            """\
An `.nml` `@model` holds `@config`, `@layers` and `@forward` sections, in any order. The section is skipped.
""",
            """\
error[TL0107]: unknown section `@layer`
 --> m.nml:2:6
  |
2 |     @layer:
  |      ^^^^^ unknown section
  |
  = note: the sections are `@config`, `@layers` and `@forward`
  = help: did you mean `@layers`?
""",
        ),
        Code(
            'TL0108',
            'a config value that is not a literal or an expression of earlier entries',
            """\
`@config` values become constructor defaults, computed in order when the model is built: literals (numbers, strings, `true`, `false`, `none`, lists/tuples of them) and arithmetic on them and on earlier entries, with `floordiv`, `ceil`, `floor`, `round`, `min`, `max`, `sqrt`, `exp` and `log`. A call of anything else, a comparison or a pipe is not one.
""",
            """\
error[TL0108]: a config value must be a literal or an expression of earlier entries
 --> cfg.nml:3:19
  |
3 |         d_model = width(256)
  |                   ^^^^^^^^^^ not known when the model is built
  |
  = note: config values are numbers, strings, `true`, `false`, `none`, lists of them, and arithmetic on them and on earlier entries (`+ - * / % **`, `floordiv`, `ceil`, `floor`, `round`, `min`, `max`, `sqrt`, `exp`, `log`)
""",
        ),
        Code(
            'TL0109',
            'a pipe stage that is not a name, call or member',
            """\
A pipe stage is a function name (`relu`), a call (`dropout(0.2)`), a member (`self.fc1`) or a member call (`self.block(mask)`).
""",
            """\
error[TL0109]: a pipe stage must be a name, a call or a member
 --> p.tl:3:21
  |
3 |         return x |> 2
  |                     ^ not a pipe stage
  |
  = help: write a function (`relu`), a call (`dropout(0.2)`) or a layer (`self.fc1`)
""",
        ),
        Code(
            'TL0110',
            'an assignment to something that cannot be assigned',
            """\
Assignment targets are names, attributes and index expressions.
""",
            """\
error[TL0110]: cannot assign to this expression
 --> a.tl:1:1
  |
1 | f(x) = 1
  | ^^^^
  |
  = help: assign to a name, an attribute or an index; write `let name = ...` for a new variable
""",
        ),
        Code(
            'TL0111',
            'a duplicate section or checkpoint clause',
            """\
A `@model` section given twice (the second is ignored), or a second `checkpoint every ...` clause in a train block.
""",
            """\
error[TL0111]: duplicate `@config` section
 --> dup.nml:4:6
  |
4 |     @config:
  |      ^^^^^^ second section
 ::: dup.nml:2:6
2 |     @config:
  |      ------ first section
  |
  = help: merge the two sections into one
""",
        ),
        Code(
            'TL0112',
            'chained comparisons',
            """\
`a < b < c` would silently mean something else in PyTorch code; write the two comparisons.
""",
            """\
error[TL0112]: comparisons cannot be chained
 --> cmp.tl:1:16
  |
1 | let ok = 0 < x < 10
  |                ^
  |
  = help: write `a < b and b < c`
""",
        ),
        Code(
            'TL0113',
            'a positional argument after a keyword argument',
            """\
In a call, positional arguments come before keyword arguments.
""",
            """\
error[TL0113]: positional argument after keyword argument
 --> kw.tl:1:26
  |
1 | let opt = Adam(lr=0.001, net)
  |                          ^^^
  |
  = help: put positional arguments first
""",
        ),
        Code(
            'TL0114',
            'a keyword argument given twice',
            """\
In a call, each keyword argument is given once.
""",
            """\
error[TL0114]: keyword argument `embed_dim` repeated
 --> r.tl:1:44
  |
1 | let net = Seq2Seq(vocab=16, embed_dim=0.0, embed_dim=128)
  |                                            ^^^^^^^^^ given again here
 ::: r.tl:1:29
1 | let net = Seq2Seq(vocab=16, embed_dim=0.0, embed_dim=128)
  |                             ------------- first given here
  |
  = help: keep one of them
""",
        ),
    )),
    Section('TL02xx: shapes (`shape-inference`)', '', (
        Code(
            'TL0201',
            "a layer's input does not fit the layer",
            """\
The error points at the stage or call that applies the layer, with the shape that reached it, and a second label at the declaration. For `LayerNorm` on a channels-first `[B, C, H, W]` tensor (the original README's ViT), the help says how to move channels last (`tlc check examples/broken/vit_layernorm.nml`).
""",
            """\
error[TL0201]: `fc2` expects 256 input features, got 128
 --> linear_features.tl:6:41
  |
6 |         return x |> self.fc1 |> relu |> self.fc2
  |                                         ^^^^^^^^ input is [B, 128]
 ::: linear_features.tl:4:5
4 |     layer fc2 = Linear(256, 10)
  |     --------------------------- `fc2` is declared here
  |
  = help: change `fc2` to `Linear(128, 10)`, or add a layer that maps 128 to 256
""",
        ),
        Code(
            'TL0202',
            "a builtin's shape rule fails",
            """\
Broadcasting, `matmul`, `cat`, `view`/`reshape`, `permute`, `transpose`, `softmax(dim=...)` and indexing each check their inputs.
""",
            """\
error[TL0202]: `add`: cannot broadcast [B, 64] with [B, 32]
 --> residual_broadcast.tl:5:16
  |
5 |         return x + self.fc(x)
  |                ^^^^^^^^^^^^^^ inputs are [B, 64] and [B, 32]
""",
        ),
        Code(
            'TL0203',
            "the dataset's samples do not match the annotated input",
            """\
The train block binds a dataset whose batched sample shape (`[B, *sample_shape]`) disagrees with `forward`'s annotation.
""",
            """\
error[TL0203]: the data gives `Classifier` inputs of shape [B, 1, 8, 8], but its `forward` expects [B, 64]
  --> data_annotation.tl:10:1
   |
10 | train net on data:
   | ^^^^^^^^^^^^^^^^^
  ::: data_annotation.tl:5:8
 5 |     fn forward(self, x: Tensor[B, 64]) -> Tensor:
   |        ------- the input is annotated here
""",
        ),
        Code(
            'TL0204',
            'a branch on a tensor\'s values',
            """\
A forward's `if` is decided before the forward runs (a config value) or per call (`self.training`); a tensor's values are known only on the device.
""",
            """\
error[TL0204]: a branch cannot depend on a tensor's values
 --> tensor_condition.nml:6:12
  |
6 |         if x.sum() > 0:
  |            ^^^^^^^^^^^
  |
  = help: choose per element with `where(cond, a, b)`, or branch on a config value or `self.training`
""",
        ),
        Code(
            'TL0205',
            'the branches of an `if` give a name different shapes',
            '',
            """\
error[TL0205]: the branches give `x` different shapes: [B, 16] and [B, 8]
 --> branch_shapes.nml:6:12
  |
6 |         if self.training:
  |            ^^^^^^^^^^^^^
  |
  = help: make both branches give the same shape, or use two names
""",
        ),
        Code(
            'TL0206',
            'a layer has no tensor of that name',
            """\
A layer's tensors are the catalogue's `param_shapes` (`weight`, `bias`, `in_proj_weight`, ...), under PyTorch's names.
""",
            """\
error[TL0206]: `wte` (Embedding) has no tensor `bias`
 --> layer_tensor_unknown.nml:6:27
  |
6 |         return wte(idx) @ wte.bias
  |                           ^^^^^^^^
  |
  = help: its tensors are `weight`
""",
        ),
        Code(
            'TL0207',
            'a layer list indexed out of range',
            '',
            """\
error[TL0207]: `h` has 3 layers; index 3 is out of range
 --> m.nml:8:13
  |
8 |         x = h[3](x)
  |             ^^^^^^^
""",
        ),
        Code(
            'TL0208',
            'a sequence longer than its position table',
            """\
An `Embedding` indexed by `arange(T)` needs a row for every position; with `T` known (the data's block size, an annotation, `tlc check -D T=...`) a longer sequence is found before running.
""",
            """\
error[TL0208]: cannot look up position 11 in `wpe`: it holds 8 positions (the sequence is longer than the table)
  --> position_table.nml:12:27
   |
12 |         return wte(idx) + wpe(pos)
   |                           ^^^^^^^^
   |
  ::: position_table.nml:9:9
 9 |         wpe = Embedding(block_size, 4)
   |         ------------------------------ `wpe` is declared here
   |
   = help: feed sequences of at most 8 tokens, or make the table `Embedding(12, ...)`
""",
        ),
        Code(
            'TL0209',
            'a layer list with more copies than a model can hold',
            """\
A layer list `[Block(d) for _ in range(n)]` of more than 10,000 copies is a typo, not a model; the checker follows every copy's shapes, so it refuses such a count instead of running out of memory.
""",
            """\
error[TL0209]: `h` would hold 2,147,483,648 copies of `Block`: a layer list holds at most 10,000
 --> big.nml:9:9
  |
9 |         h = [Block() for _ in range(2147483648)]
  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  |
  = help: check `n_layer`: real models stack tens or hundreds of blocks
""",
        ),
    )),
    Section('TL03xx: names and scope (`resolve-nml`, `check-scopes`)', '', (
        Code(
            'TL0215',
            'a size in an annotation that is not positive',
            """\
An integer config used as a size in a forward's annotation (`x: Tensor[B, width]`) must be at least 1, under the defaults and under every override that reaches the model.
""",
            """\
error[TL0215]: `width` is -1, but a size in an annotation must be positive
 --> enc.nml:6:14
  |
6 |     @forward(x: Tensor[B, width]):
  |              ^^^^^^^^^^^^^^^^^^^
  |
 ::: enc.nml:3:9
3 |         width = -1
  |         ---------- `width` is set here
""",
        ),
        Code(
            'TL0301',
            'an undefined name',
            """\
A name in a model's method that is no local variable, config entry, layer or top-level symbol.
""",
            """\
error[TL0301]: undefined name `scal`
 --> undefined_name.tl:6:20
  |
6 |         return h * scal
  |                    ^^^^
""",
            more="""\
In a script's top-level statements, a name that is no earlier `let`, model,
instance, kernel or `<kernel>_launcher` (docs/grammar.md, "Top-level statements"):

```text
error[TL0301]: undefined name `x`
 --> script_undefined_name.tl:7:20
  |
7 | let y = k_launcher(x)
  |                    ^
  |
  = help: bind it first: `let x = ...`
```

A train block's model must be an instance and its data a dataset (`check-scopes`):

```text
error[TL0301]: undefined dataset `nosuchdata`
 --> t.tl:9:14
  |
9 | train net on nosuchdata:
  |              ^^^^^^^^^^
  |
  = help: bind it first: `let nosuchdata = load_dataset(...)`
```
""",
        ),
        Code(
            'TL0302',
            'an unknown layer type or model',
            """\
Layer constructors are checked against the catalogue and the models of the module (nesting), with a did-you-mean.
""",
            """\
error[TL0302]: unknown layer type `Linaer`
 --> unknown_layer_type.tl:4:5
  |
4 |     layer fc2 = Linaer(128, 10)
  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  |
  = help: did you mean `Linear`?
""",
        ),
        Code(
            'TL0303',
            'a layer used but not declared',
            """\
`self.fc3` (or `fc3(x)` in .nml) where the model declares no `fc3`.
""",
            """\
error[TL0303]: `Classifier` has no layer `fc3`
 --> undeclared_layer.tl:6:41
  |
6 |         return x |> self.fc1 |> relu |> self.fc3
  |                                         ^^^^^^^^
  |
  = help: did you mean `fc2`?
""",
        ),
        Code(
            'TL0304',
            'a layer declared but never used (warning)',
            '',
            """\
warning[TL0304]: layer `fc2` is declared but never used
 --> undeclared_layer.tl:4:5
  |
4 |     layer fc2 = Linear(128, 10)
  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  |
  = help: remove it, or apply it in `forward` (`self.fc2(x)`)
""",
        ),
        Code(
            'TL0305',
            'an unknown function or tensor method',
            '',
            """\
error[TL0305]: unknown function `relux`
 --> unknown_function.tl:6:33
  |
6 |         return x |> self.fc1 |> relux |> self.fc2
  |                                 ^^^^^
  |
  = help: did you mean `relu`?
""",
            more="""\
In a script's top-level statements, a called function must be a script builtin
(`print`, `randn`, a listed `torch.` function such as `torch.cos`, ...: docs/grammar.md; any other `torch.` call, such as `torch.os.system`, is this error too), a model or a kernel launcher:

```text
error[TL0305]: unknown function `randnn`
 --> script_unknown_function.tl:7:14
  |
7 | let inputs = randnn(1000)
  |              ^^^^^^^^^^^^
  |
  = help: did you mean `randn`?
```
""",
        ),
        Code(
            'TL0306',
            'an unknown config entry in a layer argument',
            '',
            """\
error[TL0306]: unknown config `d_modl` in a layer argument
 --> nml_unknown_config.nml:8:21
  |
8 |         fc = Linear(d_modl, classes)
  |                     ^^^^^^
  |
  = help: did you mean `d_model`?
""",
        ),
        Code(
            'TL0307',
            'a model that contains itself',
            '',
            """\
error[TL0307]: model `Loop` cannot contain itself
 --> self_nesting.tl:3:5
  |
3 |     layer inner = Loop()
  |     ^^^^^^^^^^^^^^^^^^^^
""",
        ),
        Code(
            'TL0308',
            'a builtin called with arguments it cannot take',
            """\
Missing or non-constant `dim`, a dropout probability outside [0, 1), unknown keywords.
""",
            """\
error[TL0308]: `softmax` needs the argument `dim`
 --> softmax_no_dim.tl:6:53
  |
6 |         return x |> self.fc1 |> relu |> self.fc2 |> softmax
  |                                                     ^^^^^^^
  |
  = help: write `softmax(dim=-1)` to use the last dimension
""",
        ),
        Code(
            'TL0309',
            'a name defined twice',
            """\
Two top-level `let`s of an instance or dataset with one name, two layers or configs of one model with one name, a model and a kernel with one name, or a model named like a catalogue layer (`model Upsample`: a layer `Upsample(...)` would mean the catalogue's).
""",
            """\
error[TL0309]: `net` is defined twice
 --> d.tl:2:11
  |
2 | let net = load_dataset("digits")
  |           ^^^^^^^^^^^^^^^^^^^^^^ defined again here
 ::: d.tl:1:11
1 | let net = Classifier()
  |           ------------ first defined here
  |
  = help: rename one of them
""",
        ),
        Code(
            'TL0310',
            'models nested too deeply',
            """\
A model used as a layer of a model used as a layer ..., more than 32 levels deep: shape inference stops there, so it is an error rather than a silently unchecked program. (A model that contains itself is TL0307.)
""",
            """\
error[TL0310]: models nest more than 32 levels deep here
 --> deep.nml:9:9
  |
9 |         inner = M0()
  |         ^^^^^^^^^^^^
  |
  = help: flatten the nesting: shapes past this depth cannot be checked
""",
        ),
        Code(
            'TL0311',
            'too many steps to profile',
            """\
A warning from `tlc info`: it follows at most 20,000 layer and function applications in a file, with nested models expanded (two blocks of two blocks of two blocks ... doubles with each level). The model that passes that limit, and the models after it, are not profiled; their shapes and parameter counts are checked as usual.
""",
            """\
warning[TL0311]: `tlc info` follows at most 20,000 layer and function applications in a file; `net`, with its nested models expanded, passes that: it is not profiled, nor the models after it
   --> deep.nml:31:7
    |
31  | model M30:
    |       ^^^
    |
    = help: its shapes and parameter count are checked; profile a smaller configuration
""",
        ),
    )),
    Section('TL04xx: config and train settings (`resolve-nml`, `check-train`)', '', (
        Code(
            'TL0401',
            'an unknown train setting',
            """\
Every key is listed in docs/train-block.md.
""",
            """\
error[TL0401]: unknown setting `epoch`
  --> train_unknown_key.tl:14:5
   |
14 |     epoch = 3
   |     ^^^^^
   |
   = help: did you mean `epochs`?
""",
        ),
        Code(
            'TL0402',
            'a setting of the wrong type',
            '',
            """\
error[TL0402]: `epochs` must be an integer, got `2.5`
  --> train_epochs_float.tl:11:14
   |
11 |     epochs = 2.5
   |              ^^^
""",
        ),
        Code(
            'TL0403',
            'a setting out of range',
            """\
Also the optimizer's and loss's numeric arguments (`lr`, `label_smoothing`, ...).
""",
            """\
error[TL0403]: `epochs` must be at least 1, got 0
  --> train_epochs_zero.tl:11:14
   |
11 |     epochs = 0
   |              ^
""",
        ),
        Code(
            'TL0404',
            'an unknown optimizer',
            '',
            """\
error[TL0404]: unknown optimizer `Adma`
  --> train_unknown_optimizer.tl:12:17
   |
12 |     optimizer = Adma(lr=0.001)
   |                 ^^^^^^^^^^^^^^
   |
   = help: did you mean `Adam`?
""",
        ),
        Code(
            'TL0405',
            'an argument the optimizer, loss or schedule does not take',
            '',
            """\
error[TL0405]: `Adam` has no argument `learning_rate`
  --> train_optimizer_kwarg.tl:12:17
   |
12 |     optimizer = Adam(learning_rate=0.001)
   |                 ^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: it accepts `lr`, `betas`, `eps`, `weight_decay`, `amsgrad`, `foreach`, `maximize`, `capturable`, `differentiable`, `fused`
""",
        ),
        Code(
            'TL0406',
            'an unknown loss',
            '',
            """\
error[TL0406]: unknown loss `CrossEntropyy`
  --> train_unknown_loss.tl:13:12
   |
13 |     loss = CrossEntropyy
   |            ^^^^^^^^^^^^^
   |
   = help: did you mean `CrossEntropy`?
""",
        ),
        Code(
            'TL0407',
            'a value that is not one of the choices',
            """\
`precision`, `compile`, `lr_schedule` and `reduction`.
""",
            """\
error[TL0407]: `precision` must be one of `auto`, `fp32`, `fp16`, `bf16`, got `fp8`
  --> train_precision.tl:14:17
   |
14 |     precision = fp8
   |                 ^^^
   |
   = help: use one of `auto`, `fp32`, `fp16`, `bf16`
""",
        ),
        Code(
            'TL0408',
            "the loss does not fit the model's output and the data",
            """\
`CrossEntropy`/`NLL` need `[B, C]` outputs for `[B]` targets (or `[B, T, C]` for per-token `[B, T]` targets) with `C` the dataset's class count (for language-model data, the vocabulary). A forward that returns a tuple cannot feed a built-in loss.
""",
            """\
error[TL0408]: `CrossEntropy` needs one output per class: the model gives 5, `digits` has 10 classes
  --> loss_classes.tl:13:12
   |
13 |     loss = CrossEntropy
   |            ^^^^^^^^^^^^
   |
   = help: make the model's last layer output 10 features
""",
        ),
        Code(
            'TL0409',
            'a setting given twice',
            '',
            """\
error[TL0409]: `epochs` is set twice
  --> train_duplicate_key.tl:14:5
   |
14 |     epochs = 3
   |     ^^^^^^
  ::: train_duplicate_key.tl:11:5
11 |     epochs = 2
   |     ------ first set here
""",
        ),
        Code(
            'TL0410',
            'a softmax right before `CrossEntropy` (warning)',
            """\
`CrossEntropy` applies log-softmax itself; a softmax (or log_softmax) before it is almost always a mistake. (This example also has a TL0202.)
""",
            """\
warning[TL0410]: `log_softmax` before `CrossEntropy`: the loss applies its own
 --> softmax_dim_range.tl:6:53
  |
6 |         return x |> self.fc1 |> relu |> self.fc2 |> log_softmax(dim=2)
  |                                                     ^^^^^^^^^^^^^^^^^^
  |
  = help: return the logits, or use `loss = NLL`
""",
        ),
        Code(
            'TL0411',
            '`fp16` needs CUDA (warning)',
            """\
Whether the run has a GPU is not known statically; the emitted script falls back on the CPU.
""",
            """\
warning[TL0411]: `fp16` needs a CUDA GPU; on a CPU-only run it falls back to fp32
  --> fp16.tl:13:17
   |
13 |     precision = fp16
   |                 ^^^^
   |
   = help: use `precision = bf16` to get mixed precision on the CPU as well
""",
        ),
        Code(
            'TL0412',
            'a kernel in a trained forward stops the gradient (warning)',
            """\
A `@kernel` without a backward (`@kernel(backward=k_bwd)`, docs/kernels.md) called from a forward runs as a Triton launch that autograd does not differentiate: the layers whose outputs reach it get no gradient, so they would keep their initial weights. Reported when the model is trained (the train block has a `loss`) and a layer feeds the kernel. When no layer reaches the output except through a kernel (or no layer reaches it at all), `loss.backward()` would fail: that is an error, with the same code.
""",
            """\
warning[TL0412]: `fast_gelu` is a Triton kernel and has no backward: `fc1` before it will not train
  --> kernel_in_trained_forward.tl:15:33
   |
15 |         return x |> self.fc1 |> fast_gelu |> self.fc2
   |                                 ^^^^^^^^^ gradients stop here
   |
   = help: give `fast_gelu` a backward kernel: `@kernel(backward=fast_gelu_bwd)` (docs/kernels.md), or use a built-in op here (`gelu`, `relu`, ...)
""",
        ),
        Code(
            'TL0413',
            'a loss or metric function with the wrong parameters',
            """\
A function named by `loss = NAME` or in `metrics` takes the model's output and the targets, `(out, y)`, or the inputs too, `(out, x, y)`.
""",
            """\
error[TL0413]: a loss function takes `(out, y)` or `(out, x, y)`, `one_argument` takes 1 parameter
 --> loss_fn_params.tl:7:4
  |
7 | fn one_argument(out) -> Tensor:
  |    ^^^^^^^^^^^^
  |
  = help: write `fn one_argument(out, y) -> Tensor:` (the model's output, the targets)
""",
        ),
        Code(
            'TL0414',
            'a loss function that does not return a scalar',
            """\
A loss (or metric) written in the `.tl` is checked on one batch's types: the model's output, the inputs and the dataset's targets. What it returns must have no dimensions; the error points at the returned expression.
""",
            """\
error[TL0414]: the loss `per_sample` must return a scalar, got a tensor of shape [B]
 --> loss_fn_not_scalar.tl:9:12
  |
9 |     return cross_entropy(out, y, reduction="none") * scale
  |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ this is [B]
  |
  = help: reduce it, as in `mean(...)`, or pass `reduction="mean"` to the loss
""",
        ),
        Code(
            'TL0415',
            'an unknown or malformed metric',
            """\
`metrics = [...]` lists `accuracy`, `top_k(k)` (k a positive integer) and names of top-level `fn`s of the file.
""",
            """\
error[TL0415]: `top_k` takes one positive integer, as in `top_k(5)`
  --> loss_fn_params.tl:14:15
   |
14 |     metrics = [accuracy, top_k(0)]
   |               ^^^^^^^^^^^^^^^^^^^^
""",
        ),
        Code(
            'TL0416',
            "a built-in loss against the dataset's targets: their kind or shape",
            """\
Each built-in loss takes one kind of target (catalogue/losses.py): class indices
(`NLL`; `CrossEntropy` also takes probabilities of the output's shape) or floats
of the output's shape (`MSE`, `L1`, `SmoothL1`, `Huber`, `BCE`, `BCEWithLogits`,
`KLDiv`). `check-train` compares it with the dataset's targets, from the catalogue or
the data file's header: class labels into `MSE`, float targets into `NLL`, or float
targets of another shape than the output (`[B, 1]` against `[B]` would broadcast to
`[B, B]` without a word) are errors at the `loss =` value. Synthetic data is made to
fit the model and is not checked.
""",
            """\
error[TL0416]: `MSE` compares the output with float targets, but `digits`'s targets are class labels (10 classes)
  --> loss_mse_labels.tl:14:12
   |
14 |     loss = MSE
   |            ^^^
   |
   = help: for classes, use `loss = CrossEntropy`; for regression, load float targets (a .npz whose `y` is float, or a .csv whose target column is)
""",
        ),
        Code(
            'TL0417',
            'a forward taking more inputs than a dataset feeds',
            """\
Over data of samples and targets, the emitted training loop calls `model(x)` with each
batch's samples: one input. A forward with two or more parameters would fail at the first
step. Reported by `check-train` at the dataset's name in the `train` line. (Over data of
named fields a `loss` block feeds the forward the fields its parameters name: TL0441.)
""",
            """\
error[TL0417]: `M`'s forward takes 2 inputs (`x`, `z`), but a dataset feeds one: the samples of `data`
  --> forward_two_inputs.tl:11:14
   |
11 | train net on data:
   |              ^^^^
   |
   = help: call the model from an objective, which receives the data's fields: `objective = f` with `fn f(net, x, y) -> Tensor`
""",
        ),
        Code(
            'TL0418',
            'an objective that names no function',
            """\
`objective = NAME` and `step NAME with ...` name a top-level `fn` of the file that returns the scalar to minimise. Reported by `check-train` at the name, with a did-you-mean over the file's functions.
""",
            """\
error[TL0418]: unknown objective `g_los`: no top-level `fn` of that name (an objective of this block)
  --> gan.tl:30:10
   |
30 |     step g_los with Adam(G, lr=2e-4)
   |          ^^^^^
   |
   = help: did you mean `g_loss`?
""",
        ),
        Code(
            'TL0419',
            'an objective with the wrong parameters',
            """\
An objective takes the train block's models, in the order of `train (G, D) on data`, then the batch's inputs and targets: `fn d_loss(G, D, x, y)`. Reported by `check-train` at the function's name.
""",
            """\
error[TL0419]: the objective `d_loss` takes 3 parameters, but the train block passes 4: its models and the batch
  --> gan.tl:11:4
   |
11 | fn d_loss(G, x, y) -> Tensor:
   |    ^^^^^^
   |
   = help: write `fn d_loss(G, D, x, y) -> Tensor:`
""",
        ),
        Code(
            'TL0423',
            'a config expression with no value',
            """\
A config entry may compute its value from earlier entries (`head_dim = dim / n_heads`); it is evaluated in order when the model is built, under each instance's overrides. Using itself or a later entry is an error, and so is a division of two integers that is not exact (round with `floordiv(a, b)` or `ceil(a / b)`, or divide a float). Under an override (`Llama(dim=100)`) the error points at the override.
""",
            """\
error[TL0423]: division of sizes must be exact: 4096 is not a multiple of 30
 --> llama.nml:5:9
  |
5 |         head_dim = dim / n_heads
  |         ^^^^^^^^^^^^^^^^^^^^^^^^
  |
  = help: write `floordiv(a, b)` to round down, `ceil(a / b)` to round up, or a float (`1.0 * a / b`) for a fraction
""",
        ),
        Code(
            'TL0430',
            '`fp16` with `distributed = "fsdp"`',
            """\
FSDP2 keeps each rank's gradients as shards (DTensors), which the plain GradScaler that fp16 needs does not unscale; FSDP's own mixed precision all-gathers the weights in bf16.
""",
            """\
error[TL0430]: `precision = fp16` is not supported with `distributed = "fsdp"`
  --> train_fsdp_fp16.tl:15:17
   |
15 |     precision = fp16
   |                 ^^^^
   |
   = note: fp16 needs a GradScaler, and FSDP's sharded gradients need a sharded one
   = help: use `precision = bf16`: FSDP all-gathers the weights in bf16
""",
        ),
        Code(
            'TL0431',
            'a setting a block of objectives does not take',
            """\
A block of `step` lines names each step's objective and optimizer, so `loss`, `optimizer` and `objective` are not taken; the one-model loop's settings not built for several optimizers yet (`grad_accum`, `early_stopping`, `keep_best`, `eval_every`, `activation_checkpointing`, `log_every`, `val_every`, `decay_groups`) are errors rather than silently ignored (`distributed` with `ddp` or `fsdp`, `compile`, `lr_schedule`, `grad_clip`, `ema` and `metrics` are taken). `loss` beside `objective` and `objective` on several models are errors too, and so is a metric an objective's block cannot compute: `accuracy` or `top_k` (they read a model's output, which an objective computes itself), and in a block of `step` lines `perplexity` (there is no `val_loss`) or a metric that takes the carried values.
""",
            """\
error[TL0431]: `optimizer` is not taken by a block of `step` lines: each step names its own
  --> gan.tl:29:5
   |
29 |     optimizer = Adam(lr=0.001)
   |     ^^^^^^^^^
   |
   = help: name the objective and the optimizer in a `step` line
""",
        ),
        Code(
            'TL0432',
            'a model in two optimizers',
            """\
Each model's parameters belong to one step's optimizer: two optimizers stepping the same weights would each apply their own update with their own state.
""",
            """\
error[TL0432]: `D` is updated by two optimizers: steps `d_loss` and `g_loss`
  --> gan.tl:30:22
   |
30 |     step g_loss with Adam(D, lr=2e-4)
   |                      ^^^^^^^^^^^^^^^^
   |
   = help: give each model's parameters to one optimizer
""",
        ),
        Code(
            'TL0433',
            'an optimizer over nothing',
            """\
A step's optimizer names the models it updates as its positional arguments (`Adam(D, lr=2e-4)`); none, or a name that is not one of the block's models, is an error at the optimizer.
""",
            """\
error[TL0433]: the optimizer of step `d_loss` updates nothing
  --> gan.tl:29:22
   |
29 |     step d_loss with Adam(lr=2e-4)
   |                      ^^^^^^^^^^^^^
   |
   = help: name the models it updates: `Adam(G, ...)`
""",
        ),
        Code(
            'TL0434',
            'a step whose objective does not reach its optimizer\'s model',
            """\
The objective of a step never calls a model that the step's optimizer updates, so that optimizer would get no gradients.
""",
            """\
error[TL0434]: the objective `g_loss` never calls `G`, so the optimizer of this step gets no gradients for `G`
  --> gan.tl:30:22
   |
30 |     step g_loss with Adam(G, lr=2e-4)
   |                      ^^^^^^^^^^^^^^^^
   |
   = help: call `G(...)` in `g_loss`, or optimize another model
""",
        ),
        Code(
            'TL0435',
            'a model no step updates (warning)',
            """\
A model of `train (...)` that no step's optimizer names is frozen: it runs under `torch.no_grad()` in eval mode (a teacher). The warning says so, in case a step was forgotten; `freeze = [T]` declares a model frozen on purpose and silences it.
""",
            """\
warning[TL0435]: no step's optimizer updates `T`: it stays frozen (run under no_grad)
  --> distill.tl:20:11
   |
20 | train (S, T) on data:
   |           ^
   |
   = help: if it should train, add `step NAME with Adam(T, ...)`; if it is frozen on purpose (a teacher), say so: `freeze = [T]`
""",
        ),
        Code(
            'TL0436',
            'a random top-level `let` that a function reads',
            """\
A top-level `let` that a function reads (a noise schedule an objective indexes) is computed at the function's entry, on its inputs' device, at each call. A random one (`randn`, `rand`, `randint`, `rand_like`, `bernoulli`, `multinomial`, `dropout`) would be drawn again every time, so it is an error at the `let`.
""",
            """\
error[TL0436]: `table` is random (`randn`), but a function reads it: a top-level `let` a function reads is computed in it at each call
  --> ddpm.tl:6:13
   |
 6 | let table = randn([1000])
   |             ^^^^^^^^^^^^^
   |
   = help: draw it inside the function, or compute `table` without `randn`
""",
        ),
        Code(
            'TL0445',
            'a carried value without its initial value',
            """\
`carry NAME = none` starts the value at each epoch's start and for validation from `none` (the zero state PyTorch's recurrent layers start from); `carry NAME = net.h0` or `carry NAME = (net.h0, net.c0)` from parameters of a model of the block (a learned initial state). A `carry` line without `= value`, or with another value, is an error at the line.
""",
            """\
error[TL0445]: the carried value `state` has no initial value
  --> lm.tl:21:11
   |
21 |     carry state
   |           ^^^^^
   |
   = help: write `carry state = none`: a recurrent layer starts from zeros
""",
        ),
        Code(
            'TL0446',
            'a carried value the objective does not return',
            """\
A block's carried values are the objective's parameters after the batch, and it returns them after its loss: `fn lm_loss(net, x, y, state)` returning `(loss, state)`. An objective that returns the loss alone, or hands back `none` (the next batch would start from zeros again), a block that carries a value but computes its loss with `loss =` (no objective to take it), or a block of `step` lines none of whose objectives takes it is an error.
""",
            """\
error[TL0446]: the objective `lm_loss` never returns the carried value `state`: it returns 1 value, not the loss and 1 carried
  --> lm.tl:14:12
   |
14 |     return cross_entropy(logits.flatten(0, 1), y.flatten())
   |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  ::: lm.tl:21:11
21 |     carry state = none
   |           ----- carried here
   |
   = help: return the loss, then the value for the next batch: `return (loss, state)`
""",
        ),
        Code(
            'TL0447',
            'a carried value whose type changes between batches',
            """\
check-train infers the objective at an epoch's first batch (the carried value's initial value) and at the next (the value the first returned): the second must take what the first returned and return the same type. An LSTM's state is the pair (h, c); returning `h` alone is an error at the `return`, with what the next batch found as a note. In a block of `step` lines the steps that take the value pass it on to one another: a later step is checked from what the one before it returned, and they must return one type.
""",
            """\
error[TL0447]: the objective `lm_loss` returns a carried value its next batch cannot take (`state`: [1, B, 16])
  --> lm.tl:15:12
   |
15 |     return (cross_entropy(logits.flatten(0, 1), y.flatten()), h)
   |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = note: with it, line 9: `rnn` takes its state as a pair (h, c): [1, B, 16], [1, B, 16]
   = help: return the value in the form the objective takes it, as the layer returned it
""",
        ),
        Code(
            'TL0448',
            'a carried value over shuffled data',
            """\
A carried value continues the previous batch, so each batch must continue it too: row i of batch k + 1 the text after row i of batch k. `words` data is read that way (`batch_size` streams, windows in order, as pytorch/examples' `batchify`); `text` and `tokens` data are random windows, an error at the block's data.
""",
            """\
error[TL0448]: the carried value `state` needs batches that continue one another, but `text` data are shuffled
  --> lm.tl:19:14
   |
19 | train net on data:
   |              ^^^^
  ::: lm.tl:21:11
21 |     carry state = none
   |           ----- carried here
   |
   = help: load the text as streams: `load_dataset("words", path="stdlib", block_size=35)` takes its windows in order
""",
        ),
        Code(
            'TL0449',
            'a `carry` the block cannot take',
            """\
A value carried twice (an error at the second line, pointing at the first), or a learned start (`carry h = net.h0`) with `distributed = fsdp`, where the objective would read one rank's shard of the parameter. `carry h = none` is carried under FSDP as under DDP: each rank carries its own state over its own streams.
""",
            """\
error[TL0449]: `state` is carried twice
  --> lm.tl:23:11
   |
23 |     carry state = none
   |           ^^^^^
  ::: lm.tl:22:11
22 |     carry state = none
   |           ----- first carried here
   |
   = help: keep one `carry` line for it
""",
        ),
        Code(
            'TL0465',
            'a learned initial value that is no parameter of the block',
            """\
`carry state = net.h0` starts each epoch (and validation) from the model's `Parameter` `h0`, learned with the model; `(net.h0, net.c0)` gives an LSTM's pair. Each name must be a model of the train block and, after the dot, a `Parameter` layer of its model (`layer h0 = Parameter(2, 1, 32)`), an error at the value otherwise.
""",
            """\
error[TL0465]: `net.h1` is not a `Parameter` of `net`
  --> lm.tl:21:19
   |
21 |     carry state = (net.h0, net.h1)
   |                   ^^^^^^^^^^^^^^^^
   |
   = help: declare it in `net`'s model, as `layer h1 = Parameter(num_layers, 1, hidden)`, and expand it to the batch in the objective
""",
        ),
        Code(
            'TL0440',
            "an objective's parameter that names no field of the data",
            """\
Over data of named fields (a .npz of named arrays, `digits-captions`), the parameters of
an objective (and of a metric `fn` beside it) after its models name the fields each batch
gives it: `fn clip_loss(net, image, text)` receives `image` and `text`. A name that is no
field would be a `KeyError` at the first batch. Reported by `check-train` at the
parameter, with the train block's line that names the function. Data of `x` and `y` gives
two parameters the samples and the targets in order, whatever their names.
""",
            """\
error[TL0440]: `txt` is not a field of `digits-captions`: the objective `pairs_loss` receives the batch's fields by name
  --> unknown_field.tl:8:27
   |
 8 | fn pairs_loss(net, image, txt) -> Tensor:
   |                           ^^^
  ::: unknown_field.tl:15:17
15 |     objective = pairs_loss
   |                 ---------- named here
   |
   = help: did you mean `text`?
""",
        ),
        Code(
            'TL0441',
            "a `loss` block's forward parameter that names no field of the data",
            """\
Over data of named fields (`digits-captions`, a .npz of named arrays, a folder of pairs), a
`loss = ...` block feeds the model's forward the fields its parameters name
(`fn forward(self, image, text)` receives `image` and `text`) and the loss the target field
(`target = FIELD`, TL0470). A parameter that is no field would be a `KeyError` at the first
batch. Reported by `check-train` at the parameter, the train block's data marked. (A block
of objectives names its fields in the objective's parameters instead: TL0440.)
""",
            """\
error[TL0441]: `x` is not a field of `digits-captions`: a `loss` block feeds `M`'s forward the fields its parameters name
  --> loss_on_fields.tl:4:22
   |
 4 |     fn forward(self, x: Tensor[B, 1, 8, 8]) -> Tensor:
   |                      ^
  ::: loss_on_fields.tl:10:14
10 | train net on pairs:
   |              ----- the fields come from here
   |
   = help: name the forward's parameters after the fields: `image`, `text`, `label`
""",
        ),
        Code(
            'TL0470',
            "a `loss` block's target that is no field of the data",
            """\
Over data of named fields, a `loss` block's loss compares the output with the field
`target = FIELD` names; without the key, the field `label`, else `y`. Reported by
`check-train` at the key's value (with a did-you-mean over the fields), or, where the key is
absent and the data has neither `label` nor `y`, at the train block's data.
""",
            """\
error[TL0470]: `lable` is not a field of `digits-captions`: `target` names the field the loss compares the output with
  --> target_unknown.tl:17:14
   |
17 |     target = lable
   |              ^^^^^
   |
   = help: did you mean `label`?
""",
        ),
        Code(
            'TL0471',
            '`target` where there is no field to pick',
            """\
`target = FIELD` picks the field a `loss` block's loss takes from data of named fields. Data
of samples and targets (`digits`, a .npz of `x` and `y` alone) gives the loss its targets, and
a block of objectives passes each objective the fields its parameters name: the key would be
ignored. Reported by `check-train` at the key.
""",
            """\
error[TL0471]: `target` picks a field for the loss, and `digits`, which yields samples and targets, has none to pick
  --> target_on_xy.tl:13:5
   |
13 |     target = label
   |     ^^^^^^
   |
   = help: remove `target`: the loss takes the data's targets
""",
        ),
        Code(
            'TL0457',
            '`freeze` names something that is not a model of a block of `step` lines',
            """\
In a train block of `step` lines, `freeze = [T]` names the models frozen on purpose (a teacher): whole models of `train (...)`, not layers. A name that is not one of the block's models is an error at the list.
""",
            """\
error[TL0457]: `Teacher` is not a model of this train block: with `step` lines, `freeze` names whole models
  --> distill.tl:21:14
   |
21 |     freeze = [Teacher]
   |              ^^^^^^^^^
   |
   = help: its models: `T`, `S`
""",
        ),
        Code(
            'TL0458',
            'a model both frozen and updated by a step',
            """\
A model listed in `freeze` is run under `torch.no_grad()` and never updated, so a step's optimizer that names it would get no gradients. The error is at the `freeze` list, the step's optimizer marked.
""",
            """\
error[TL0458]: `T` is frozen, but step `distil` updates it
  --> distill.tl:21:14
   |
21 |     freeze = [T]
   |              ^^^
  ::: distill.tl:22:22
22 |     step distil with Adam(S, T, lr=1e-3)
   |                      ------------------- updated here
   |
   = help: remove `T` from `freeze` or from the optimizer of that step
""",
        ),
        Code(
            'TL0459',
            'a step\'s epochs that hold no epoch',
            """\
`step NAME with Opt(...) from epoch A until epoch B` runs the step in epochs A to B only (counted from 1, both included): a teacher trained first, then frozen while a student distils from it. An epoch below 1, or `from` after `until`, is an error at the clause.
""",
            """\
error[TL0459]: step `distil` runs from epoch 16 until epoch 15: no epoch
  --> distill.tl:44:44
   |
44 |     step distil with Adam(S, lr=3e-3) from epoch 16 until epoch 15
   |                                            ^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: write `until epoch 16` or later
""",
        ),
        Code(
            'TL0460',
            'a `samples` function that does not take the block\'s models',
            """\
`samples = sample` names a top-level `fn` that the script calls after each epoch with the block's models, in the order `train (...)` lists them, and nothing else (it draws its own noise).
""",
            """\
error[TL0460]: `sample` takes 2 parameters, but `samples` passes 1: the block's model
  --> ddpm.tl:30:4
   |
30 | fn sample(net, x) -> Tensor:
   |    ^^^^^^
  ::: ddpm.tl:44:15
44 |     samples = sample
   |               ------ named here
   |
   = help: write `fn sample(net) -> Tensor:`
""",
        ),
        Code(
            'TL0461',
            'a `samples` function that does not return images',
            """\
The script writes what `samples` returns as a PNG grid, so it must be a batch of images `[N, C, H, W]` with 1 (grey) or 3 (RGB) channels, in [0, 1] (values outside are clamped). A flat `[N, 64]` needs a `.view(N, 1, 8, 8)`.
""",
            """\
error[TL0461]: the samples of `sample` must be images [N, C, H, W], got a tensor of shape [64, 64]
  --> ddpm.tl:37:12
   |
37 |     return (x + 1.0) * 0.5
   |            ^^^^^^^^^^^^^^^
   |
   = help: return `[N, 1, H, W]` or `[N, 3, H, W]`, as in `x.view(64, 1, 8, 8)`
""",
        ),
        Code(
            'TL0450',
            'a parameter selection names no model, group or layer',
            """\
A `group` line or an optimizer's argument selects parameters from the block's models: a model (`net`), a layer path of one (`net.blocks`, `net.blocks[0:2]`, `net.head.weight`), a group, or `params(...)` of paths. A name that is none of them, or a path that is not a layer or parameter of the model, is an error, with the nearest name as help.
""",
            """\
error[TL0450]: `net.blokcs` is not a layer or parameter of `net`
  --> gpt.tl:26:20
   |
26 |     group hidden = params(net.blokcs, ndim=2)
   |                    ^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: did you mean `net.blocks`?
""",
        ),
        Code(
            'TL0451',
            'a parameter group that selects nothing',
            """\
A `group` line, or an optimizer's argument, that resolves to no parameter of the specialised model (a `match` glob or an `ndim` no parameter has, a complement that removes everything) would give an optimizer nothing to update.
""",
            """\
error[TL0451]: the group `hidden` selects no parameters
  --> gpt.tl:26:20
   |
26 |     group hidden = params(net.blocks, ndim=3)
   |                    ^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: check its layer paths, `match` and `ndim`
""",
        ),
        Code(
            'TL0452',
            'a parameter in two optimizers',
            """\
Each parameter is updated by at most one optimizer: two would each apply their own update to it at every step. The message names the parameters two optimizers share; subtract one group from the other (`params(net) - hidden`).
""",
            """\
error[TL0452]: `net.blocks.0.fc.weight` and `net.blocks.1.fc.weight` are updated by two optimizers: `Muon` of step `ce` and `AdamW` of step `ce`
  --> gpt.tl:27:41
   |
27 |     step ce with Muon(hidden, lr=0.02), AdamW(net, lr=3e-3)
   |                                         ^^^^^^^^^^^^^^^^^^^
  ::: gpt.tl:27:18
27 |     step ce with Muon(hidden, lr=0.02), AdamW(net, lr=3e-3)
   |                  --------------------- first here
   |
   = help: give each parameter to one optimizer: subtract one group from the other
""",
        ),
        Code(
            'TL0453',
            'trainable parameters no optimizer updates (warning)',
            """\
A model whose parameters the block's optimizers update only in part: the rest get gradients at every backward but never change. Usually a group was meant to take them (the complement, `params(net) - hidden`). A model no optimizer names at all is frozen instead (TL0435).
""",
            """\
warning[TL0453]: 10 parameters of `net` are in no optimizer: `net.embed.weight`, `net.embed.bias`, `net.blocks.0.ln.weight` and 7 more (they get gradients but never change)
  --> gpt.tl:25:7
   |
25 | train net on data:
   |       ^^^
   |
   = help: add them to an optimizer, e.g. a group `params(...) - ...` for the rest
""",
        ),
        Code(
            'TL0454',
            'Muon on a parameter that is not 2-D',
            """\
torch.optim.Muon orthogonalises each parameter's update as a matrix, so it takes 2-D parameters only: the blocks' hidden weights. Embeddings, the head, biases and norm gains go to AdamW, as torch.optim.Muon's documentation prescribes. The message names the first parameter that is not 2-D.
""",
            """\
error[TL0454]: `Muon` updates 2-D parameters only, but `net.blocks.0.ln.weight` has 1 dimension ([16])
  --> gpt.tl:28:18
   |
28 |     step ce with Muon(hidden, lr=0.02), AdamW(rest, lr=3e-3)
   |                  ^^^^^^^^^^^^^^^^^^^^^
   |
   = help: select the matrices (`params(..., ndim=2)`); give the rest to AdamW
""",
        ),
        Code(
            'TL0455',
            'a malformed parameter group',
            """\
`params(PATH, ..., match="GLOB", ndim=N)` takes layer paths and those two keywords; a selection is a model, a path, a group, `params(...)`, or `a + b` / `a - b` of them. A group may not take a model's name, be defined twice, or be defined through itself.
""",
            """\
error[TL0455]: `params` takes no keyword `dims`
  --> gpt.tl:26:20
   |
26 |     group hidden = params(net.blocks, dims=2)
   |                    ^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: did you mean `ndim`?
""",
        ),
        Code(
            'TL0456',
            'what several optimizers do not take yet',
            """\
In a block of `step` lines each optimizer has its own `lr_schedule` (its own keyword, or the block's for every optimizer that sets none), stepped after each of its optimizer steps. `plateau` steps on the validation loss after each epoch instead, which is not taken there. A one-model block's `optimizer = (A(...), B(...))` does not go with `distributed = "fsdp"` yet (its sharded checkpoints hold one optimizer); `ddp` takes it.
""",
            """\
error[TL0456]: `plateau` steps on the validation loss after each epoch; the optimizers of `step` lines take schedules of their optimizer steps
  --> gpt.tl:26:19
   |
26 |     lr_schedule = plateau(patience=2)
   |                   ^^^^^^^^^^^^^^^^^^^
   |
   = help: use a per-step schedule: `cosine(...)`, `linear(...)` or `step(...)`
""",
        ),
        Code(
            'TL0420',
            'an unknown config override',
            """\
Overrides of an instance (`MyModel(d_model=256)`) and of a nested model used as a layer are checked against the model's `@config`.
""",
            """\
error[TL0420]: `TransformerBlock` has no config entry `d_modle`
 --> override_unknown.tl:4:29
  |
4 | let net = CustomTransformer(d_modle=256)
  |                             ^^^^^^^^^^^
  |
  = help: did you mean `d_model`?
""",
        ),
        Code(
            'TL0421',
            'an override of the wrong type',
            '',
            """\
error[TL0421]: config `d_model` of `TransformerBlock` is an integer, got `256.5`
 --> override_type.tl:4:29
  |
4 | let net = CustomTransformer(d_model=256.5)
  |                             ^^^^^^^^^^^^^
  |
  = help: the default is `512`
""",
        ),
        Code(
            'TL0422',
            'invalid layer constructor arguments',
            """\
Arguments are bound and validated as PyTorch would at construction, under the config defaults and again under each instance's overrides (then the error points at the override).
""",
            """\
error[TL0422]: `attn`: `embed_dim` (250) must be divisible by `num_heads` (8)
 --> mha_heads.tl:3:42
  |
3 |     layer attn = MultiHeadAttention(250, 8)
  |                                          ^
""",
        ),
    )),
    Section('TL05xx: kernels', """\
See docs/kernels.md for the rules behind them.
""", (
        Code(
            'TL0501',
            'undefined name or function in a kernel',
            '',
            """\
error[TL0501]: undefined name `yy` in kernel `bad`
  --> k.tl:10:34
   |
10 |     tl.store(out_ptr + offs, x + yy, mask=offs < n, foo=1)
   |                                  ^^
   |
   = help: did you mean `y`?
""",
        ),
        Code(
            'TL0502',
            'unknown `tl.` member',
            '',
            """\
error[TL0502]: `tl.lod` is not a function of triton.language
 --> k.tl:7:13
  |
7 |     let x = tl.lod(x_ptr + offs, mask=offs < n)
  |             ^^^^^^
  |
  = help: did you mean `tl.load`?
""",
        ),
        Code(
            'TL0503',
            'wrong arguments to a `tl.` function',
            '',
            """\
error[TL0503]: `tl.arange` is missing the argument `end`
 --> k.tl:9:13
  |
9 |     let z = tl.arange(0)
  |             ^^^^^^^^^
  |
  = help: `tl.arange(start, end)`
""",
        ),
        Code(
            'TL0504',
            'a `tl.arange` bound that is not a power of two',
            '',
            """\
error[TL0504]: `BLOCK` is a `tl.arange` bound, so it must be a power of two, not 1000
 --> k.tl:4:58
  |
4 | @kernel def bad(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 1000):
  |                                                          ^^^^
  |
  = help: use 512 or 1024
""",
        ),
        Code(
            'TL0505',
            '`tl.load` without a mask (warning)',
            '',
            """\
warning[TL0505]: `tl.load` without a mask reads past the end of the tensor in the last block
 --> k.tl:8:13
  |
8 |     let y = tl.load(x_ptr + offs)
  |             ^^^^^^^
  |
  = help: pass `mask=offsets < n` (and `other=` for masked lanes)
""",
        ),
        Code(
            'TL0506',
            'syntax a Triton kernel cannot express',
            '',
            """\
error[TL0506]: returning a value is not supported in a kernel
 --> k.tl:4:12
  |
4 |     return x
  |            ^
  |
  = help: a kernel returns nothing: store results with `tl.store`
""",
        ),
        Code(
            'TL0507',
            'the launcher cannot be derived from the kernel',
            '',
            """\
error[TL0507]: cannot work out the grid for axis 0
 --> k.tl:2:16
  |
2 |     let offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
  |                ^^^^^^^^^^^^^
  |
  = help: compare the offsets built from `tl.program_id(0)` with a size parameter in a mask, as in `offsets < n`
""",
        ),
        Code(
            'TL0508',
            "a model's kernel call does not fit the kernel's launcher",
            """\
`synthesize-launchers` derives each kernel's launcher from its dataflow: loaded
pointers are positional tensors, stored-only pointers keyword outputs, other scalars
positional. A call in a forward (`x |> k`, `k(x, y, alpha)`) must give the
positional ones; a kernel that stores to no pointer returns nothing to use. A
pointer parameter never loaded or stored (a lost `tl.store`) is a positional scalar.
""",
            """\
error[TL0508]: `fast_gelu_launcher` takes 2 positional arguments (`x`, `out_ptr`), this call gives 1
  --> kernel_call_arguments.tl:16:33
   |
16 |         return x |> self.fc1 |> fast_gelu |> self.fc2
   |                                 ^^^^^^^^^
   |
   = help: `out_ptr` is never loaded or stored, so it is not a tensor: does the kernel miss its `tl.store`?
""",
        ),
        Code(
            'TL0509',
            'a kernel option or tuning candidate that cannot be used',
            """`@kernel(...)` takes `backward=<kernel>`, `num_warps=[...]` and `num_stages=[...]`; a `tl.constexpr` parameter takes a list of candidates as its default (`BLOCK: tl.constexpr = [64, 128]`), which the launcher's `triton.autotune` tries. Candidates are positive whole numbers, only `tl.constexpr`s are tuned, and a block that spans a whole size (`cols < n_cols`) is fixed by that size.
""",
            """error[TL0509]: `BLOCK` is tuned, so it must be a `tl.constexpr`
 --> kernel_tuned_not_constexpr.tl:3:46
  |
3 | @kernel def scale(x_ptr, out_ptr, n, BLOCK = [256, 512]):
  |                                              ^^^^^^^^^^
  |
  = help: annotate it: `BLOCK: tl.constexpr = [...]`
""",
        ),
        Code(
            'TL0510',
            "a kernel's backward does not match it",
            """`@kernel(backward=k_bwd)` pairs a kernel with the kernel of its gradients, by name: each tensor the backward loads is a tensor of the forward (which the forward saves) or `d<output>`, the upstream gradient of one of its outputs; each tensor it stores is `d<input>`, the gradient of one of the forward's tensor inputs, and every tensor input has one; each scalar is a scalar of the forward. Where both are annotated (`Tensor[M, N]`), a gradient has the shape of its tensor.
""",
            """error[TL0510]: `bias_act_bwd` returns 1 gradient, `bias_act` takes 2 tensors: `b` has none
  --> kernel_backward_missing_gradient.tl:12:13
   |
12 | @kernel def bias_act_bwd(dout_ptr: Tensor[M, N], x_ptr: Tensor[M, N], b_ptr: Tensor[N], dx_ptr: Tensor[M, N], M, N, BLOCK: tl.constexpr):
   |             ^^^^^^^^^^^^
   |
   = help: store `db` in `bias_act_bwd`: add a parameter `db_ptr`
""",
        ),
    )),
    Section('TL07xx: datasets', """\
`tensorloom/catalogue/datasets.py` (`lookup_dataset`) returns these as `DatasetError`
values; the pass that checks `load_dataset(...)` turns them into diagnostics, the
span on the dataset name (TL0701, TL0705, TL0706) or on the option keyword at fault
(`DatasetError.option`: TL0702, TL0703, TL0704).
""", (
        Code(
            'TL0701',
            'unknown dataset',
            '',
            """\
error[TL0701]: unknown dataset `mnits`
 --> mnist.tl:8:25
  |
8 | let data = load_dataset("mnits", flatten=true)
  |                         ^^^^^^^
  |
  = help: did you mean `mnist`?
""",
        ),
        Code(
            'TL0702',
            'unknown option for this dataset',
            '',
            """\
error[TL0702]: `digits` has no option `flaten`
 --> mnist.tl:8:35
  |
8 | let data = load_dataset("digits", flaten=true)
  |                                   ^^^^^^
  |
  = help: did you mean `flatten`?
""",
        ),
        Code(
            'TL0703',
            'option of the wrong type',
            '',
            """\
error[TL0703]: option `flatten` expects `true` or `false`, got `1`
 --> mnist.tl:8:35
  |
8 | let data = load_dataset("digits", flatten=1)
  |                                   ^^^^^^^
""",
        ),
        Code(
            'TL0704',
            'option out of range',
            '',
            """\
error[TL0704]: `vocab` must be at least 2, got 1
 --> seq.tl:3:36
  |
3 | let data = load_dataset("reverse", vocab=1)
  |                                    ^^^^^
""",
        ),
        Code(
            'TL0705',
            'a data file of a format the scripts cannot read',
            '',
            """\
error[TL0705]: cannot load `data/train.parquet`: expected a .npz, .pt or .csv file
 --> train.tl:4:25
  |
4 | let data = load_dataset("data/train.parquet")
  |                         ^^^^^^^^^^^^^^^^^^^^
  |
  = help: convert the data to one of those formats
""",
        ),
        Code(
            'TL0706',
            'a dataset without an option it needs',
            """\
A `.csv` file needs `target=`; language-model data (`"text"`, `"tokens"`) needs `path=` and `block_size=`, and `"tokens"` also `vocab=` (the tokenizer's vocabulary: the model's head must be that wide).
""",
            """\
error[TL0706]: a .csv dataset needs the label column: `target=` is missing for `data/iris.csv`
 --> train.tl:4:25
  |
4 | let data = load_dataset("data/iris.csv")
  |                         ^^^^^^^^^^^^^^^
  |
  = help: add `target="label"` naming the column
""",
            more="""\
```text
error[TL0706]: a `tokens` dataset needs `vocab=`
 --> lm_tokens_options.tl:9:12
  |
9 | let data = load_dataset("tokens", path="train.bin", block_size=1024)
  |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  |
  = help: write `load_dataset("tokens", path="train.bin", block_size=1024, vocab=50257)`
```
""",
        ),
        Code(
            'TL0707',
            'warning: `load_dataset()` trains on synthetic data',
            """\
Reported by `check-train` at the call, so that a run on random samples is never
mistaken for a run on real data. The samples' shape and classes come from the
model (pass `infer-synthetic-data`).
""",
            """\
warning[TL0707]: `load_dataset()` names no data: training uses random synthetic samples
 --> tiny.tl:8:12
  |
8 | let data = load_dataset()
  |            ^^^^^^^^^^^^^^
  |
  = note: their shape and classes are inferred from the model's input and output
  = help: name a dataset, as in `load_dataset("digits")`, or a file: `load_dataset("data/train.npz")`
""",
        ),
        Code(
            'TL0708',
            'warning: a data file is not there at check time',
            """\
`tlc check` reads what a data file says about itself (a .npz's array headers, a
.csv's header row, a token file's size) to check the model against it. A relative
path is looked up in the working directory, then beside the program. An absent file
is a warning, not an error: the data may live on the training machine. Declare
`sample_shape=[...]` and `num_classes=` to check the model without it.
""",
            """\
warning[TL0708]: `elsewhere.npz` is not there at check time: the model is not checked against it
 --> file_absent.tl:9:12
  |
9 | let data = load_dataset("elsewhere.npz")
  |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  |
  = help: if the data lives on the training machine, declare `sample_shape=[...]` (and `num_classes=`) to check the model
""",
        ),
        Code(
            'TL0709',
            'a data file contradicts the program',
            """\
The file's header disagrees with a declaration (`sample_shape=`, `num_classes=` fewer
than its labels, `num_classes=` on float targets), or cannot feed the program (a token
file shorter than one window of `block_size` + 1 tokens). The span is the option at
fault.
""",
            """\
error[TL0709]: `sample_shape=[16]` contradicts `cls12.npz`, whose samples are [20]
 --> sample_shape_contradicts.tl:8:38
  |
8 | let data = load_dataset("cls12.npz", sample_shape=[16], num_classes=10)
  |                                      ^^^^^^^^^^^^^^^^^
  |
  = help: write `sample_shape=[20]`, or leave it out: the file's header says it
""",
        ),
        Code(
            'TL0710',
            'a data file is not in the format its name says',
            """\
A .npz whose arrays are not plain numeric C-order .npy arrays (a .npz of named arrays
without `x` and `y` feeds its arrays by name: to a `loss` block's forward, TL0441, or to
objectives, TL0440), or whose `x` and `y` disagree on the number of samples, or whose labels are
negative; a .pt that is no `torch.save` zip (truncated, the legacy format) or whose pickle is
damaged (a pickle holding more than tensors is TL0719); a .csv without the `target=` column,
a token file whose size is not whole tokens of its `dtype`: the run would fail on loading it.
""",
            """\
error[TL0710]: `table.csv` has no column `lable`: its columns are `f1`, `f2`, `f3`, `label`
  --> csv_header.tl:16:12
   |
16 | let typo = load_dataset("table.csv", target="lable")
   |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: `target=` names the label column of the header row
""",
        ),
        Code(
            'TL0711',
            "a .npz's arrays (a .pt's tensors) disagree on the number of samples",
            """\
Every array of a .npz dataset (every tensor of a .pt) is one field with one row per sample,
so their first sizes agree: the loader takes the same rows of each. Reported by `check-train` at the
`load_dataset`, from the arrays' headers (their data is not read).
""",
            """\
error[TL0711]: `uneven.npz` holds 40 samples of `image` but 30 of `text`
  --> npz_uneven.tl:11:13
   |
11 | let pairs = load_dataset("uneven.npz")
   |             ^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: every array of a dataset needs one row per sample
""",
        ),
        Code(
            'TL0712',
            'a .npz array without a sample axis',
            """\
A 0-d array (`np.savez(path, scale=np.float32(2))`) has no rows to batch. Reported by
`check-train` at the `load_dataset`, from the array's header.
""",
            """\
error[TL0712]: `scalar.npz`'s `scale` is a scalar, not an array of samples
  --> npz_scalar.tl:11:12
   |
11 | let data = load_dataset("scalar.npz")
   |            ^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: save one row per sample: an array of shape [N, ...]
""",
        ),
        Code(
            'TL0713',
            '`fields=` on a file that has no named arrays',
            """\
`load_dataset(path, fields=[...])` names the arrays of a .npz (or the tensors of a .pt
dict) to load; a .csv has columns, a label and features, not named arrays. Reported by
`check-train` at the option.
""",
            """\
error[TL0713]: `fields=` names arrays of a .npz or .pt file, and `table.csv` is neither
  --> fields_on_csv.tl:12:55
   |
12 | let pairs = load_dataset("table.csv", target="label", fields=["image"])
   |                                                       ^^^^^^^^^^^^^^^^
   |
   = help: remove `fields=`
""",
        ),
        Code(
            'TL0714',
            '`fields=` names an array the file does not hold',
            """\
Where the .npz is there at check time, each name of `fields=` must be one of its arrays
(read from the archive's headers); the loader would fail on the first that is not.
Reported by `check-train` at the option. (A .npz that is not there is warning TL0708: its
fields are taken as declared, their shapes unknown until run time.)
""",
            """\
error[TL0714]: `pairs.npz` has no array `caption`: it holds `image`, `text`
  --> fields_missing_array.tl:12:39
   |
12 | let pairs = load_dataset("pairs.npz", fields=["image", "caption"])
   |                                       ^^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: name arrays the file holds
""",
        ),
        Code(
            'TL0715',
            'a folder of pairs whose sample lacks a partner file',
            """\
A folder of pairs (`load_dataset("pairs/")`) holds one folder per field, and in each one file
per sample named by the sample's stem: `image/0007.png` and `text/0007.txt` are one sample.
A stem one field folder has and another lacks would leave a sample without that field.
Reported by `check-train` at the `load_dataset`, from the folder's listing; the script's
loader stops with the same message.
""",
            """\
error[TL0715]: `pairs/text/` has no file for the sample `0007` (`image/0007.png` has no partner there)
  --> folder_partner.tl:11:13
   |
11 | let pairs = load_dataset("pairs/")
   |             ^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: every field folder holds one file per sample, named by its stem
""",
        ),
        Code(
            'TL0716',
            "a folder of pairs whose field's files differ in shape",
            """\
The samples of one field are stacked into one tensor, so every file of a field folder has
one shape: each PNG the same size and channels (read from its header), each .npy the same
shape. Reported by `check-train` at the `load_dataset`, naming the first file that differs
from the first file of the field.
""",
            """\
error[TL0716]: `image/0003.png` is [3, 16, 16], but `image/0000.png` is [1, 8, 8]: a field's samples share one shape
  --> folder_shapes.tl:11:13
   |
11 | let pairs = load_dataset("pairs/")
   |             ^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: resize or convert the files so that every sample of the field has one shape
""",
        ),
        Code(
            'TL0717',
            'a folder of pairs holds a file or folder its loader cannot read',
            """\
A field's files share one extension the loader reads: `.png` (8-bit grey, grey and alpha, RGB
or RGBA, not interlaced), `.txt` (UTF-8 text, as token ids), `.cls` (one integer class),
`.npy`. A field folder named as no identifier, a PNG of another kind (16-bit, a palette,
interlaced), a .cls that is not an integer, text that is not UTF-8, or a folder with no
field folders, is an error at the `load_dataset`.
""",
            """\
error[TL0717]: `pairs/image/0002.png` is a 16-bit PNG of colour type 0: the loader reads 8-bit grey, grey and alpha, RGB or RGBA PNGs, not interlaced
  --> folder_png_kind.tl:11:13
   |
11 | let pairs = load_dataset("pairs/")
   |             ^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: save it as an 8-bit PNG without interlacing (Pillow: `image.convert("RGB")`)
""",
        ),
        Code(
            'TL0718',
            'a folder of pairs that is not there, its fields unnamed',
            """\
A program's fields are the folder's field folders, read at check time. Where the folder is
not there (it lives on the training machine), `fields=[...]` names them, and their shapes
wait for run time (warning TL0708); without it nothing says what the batches hold.
""",
            """\
error[TL0718]: `elsewhere/` is not there at check time, and nothing says which fields it holds
  --> folder_absent.tl:11:13
   |
11 | let pairs = load_dataset("elsewhere/")
   |             ^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: name its field folders: `load_dataset("elsewhere/", fields=["image", "label"])`
""",
        ),
        Code(
            'TL0719',
            'a .pt dataset holds something other than tensors',
            """\
A `.pt` dataset is `torch.save` of a dict of equal-length tensors (its fields, by name) or of
`(x, y)`. `tlc check` reads the file's pickle for the tensors' shapes and dtypes without
running it: only a tensor's own rebuild functions and storage types are allowed, and the
emitted script loads it with `torch.load(path, weights_only=True)`. Any other object (a
number, a string, a class of the program's) is reported at the `load_dataset`, and nothing
of the file runs. A damaged or truncated file is TL0710.
""",
            """\
error[TL0719]: `mixed.pt`'s `classes` is `list`, not a tensor
  --> pt_mixed.tl:11:13
   |
11 | let pairs = load_dataset("mixed.pt")
   |             ^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: save a dict of tensors: `torch.save({"image": x, "label": y}, path)`
""",
        ),
    )),
    Section('TL08xx: published weights and fine-tuning (`check-weights`)', """\
`weights NAME from SOURCE:` blocks (docs/train-block.md, "Starting from published weights")
are checked against the source's header (catalogue/weight_files.py) and the instance's
state dict; the emitted script checks again when it loads them.
""", (
        Code(
            'TL0801',
            'warning: a weights source is not there at check time',
            """\
A relative path is looked up in the working directory, then beside the program. An absent
source is a warning, not an error: the weights may live on the training machine, where the
script reads them (`--weights PATH` points it elsewhere).
""",
            """\
warning[TL0801]: `elsewhere/gpt2` is not there at check time: the names are not checked
  --> absent.tl:12:18
   |
12 | weights net from "elsewhere/gpt2":
   |                  ^^^^^^^^^^^^^^^^ no such file or folder
   |
   = help: if the weights live on the training machine, pass `--weights PATH` there
""",
        ),
        Code(
            'TL0802',
            'a weights file that cannot be read',
            """\
The source is a safetensors file, a Hugging Face folder (model.safetensors, a sharded
model.safetensors.index.json with its shards, or pytorch_model.bin) or a torch state dict
(.pt, .pth, .bin). Only the header is read: a truncated file, one that is no safetensors or
torch file, or an index naming a shard the folder lacks is this error. A torch file's pickle
is read by the restricted unpickler that reads a .pt dataset (TL0719): it holds tensors and
their containers, and one that names anything else (`os.system`, a class of the program that
saved it) is refused in the same words, none of it run.
""",
            """\
error[TL0802]: cannot read the weights: w.safetensors: not a safetensors file (its header is not JSON)
  --> garbage.tl:12:18
   |
12 | weights net from "w.safetensors":
   |                  ^^^^^^^^^^^^^^^
""",
        ),
        Code(
            'TL0803',
            'a `weights` block names no model instance',
            """\
`weights NAME from ...` fills the instance `NAME`, declared with `let NAME = Model(...)`.
""",
            """\
error[TL0803]: `model` is not a model instance
  --> unknown_instance.tl:12:9
   |
12 | weights model from "w.safetensors":
   |         ^^^^^ weights are for an instance declared with `let`
   |
   = help: declare it first: `let model = GPT(...)`
""",
        ),
        Code(
            'TL0804',
            'a model tensor no file tensor fills',
            """\
Every parameter and buffer of the instance's state dict (at its config's sizes) must be
filled by one of the file's tensors through a rule; a weight the model ties to another
(a head using `wte.weight`) is one tensor.
""",
            """\
error[TL0804]: nothing in `w.safetensors` fills `fc2.bias`
  --> missing_tensor.tl:12:1
   |
12 | weights net from "w.safetensors":
   | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ 1 of the model's tensors are not filled
   |
   = help: add a rule whose target names them
""",
        ),
        Code(
            'TL0805',
            'a file tensor no rule maps',
            """\
Each of the file's tensors is mapped by the first rule whose pattern matches it, or
ignored by an `ignore` rule. One no rule matches is an error: a forgotten rule loses
weights silently otherwise.
""",
            """\
error[TL0805]: no rule maps `extra.attn.mask` of `w.safetensors`
  --> unmapped.tl:12:1
   |
12 | weights net from "w.safetensors":
   | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ 1 of the file's tensors are not mapped
   |
   = help: map them, or ignore them: `ignore "extra.attn.mask"`
""",
        ),
        Code(
            'TL0806',
            "a file tensor's shape differs from the model's",
            """\
Reported once per rule, at the rule, with both names and both shapes. Where the file stores
a matrix the other way round (Hugging Face GPT-2's `Conv1D` keeps [in, out] where
`nn.Linear` keeps [out, in]), end the rule with `transposed`.
""",
            """\
error[TL0806]: `fc1.weight` is [8, 4], the model's `fc1.weight` is [4, 8]
  --> shape_transposed.tl:14:5
   |
14 |     "{l}.weight" -> "{l}.weight"
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^ shapes differ
   |
   = help: the file stores it the other way round: end the rule with `transposed`
""",
        ),
        Code(
            'TL0807',
            "a rule's target is not one tensor of the model",
            """\
A rule maps a file tensor to a name the model's state dict lacks, or two file tensors to
the same model tensor.
""",
            """\
error[TL0807]: `fc2.weight` maps to `out.weight`, which the model does not have
  --> no_target.tl:14:5
   |
14 |     "fc2.{p}" -> "out.{p}"
   |     ^^^^^^^^^^^^^^^^^^^^^^ no `out.weight` in the model
   |
   = help: the model has `fc1.weight`
""",
        ),
        Code(
            'TL0808',
            "warning: the load casts a file tensor's dtype",
            """\
The emitted model keeps float32 parameters (mixed precision casts in the forward); a
float16 or bfloat16 file is cast when it is loaded. Reported once per rule.
""",
            """\
warning[TL0808]: `fc1.weight` is F16: the load casts it to the model's float32
  --> dtype.tl:13:5
   |
13 |     "fc1.{p}" -> "fc1.{p}"
   |     ^^^^^^^^^^^^^^^^^^^^^^ F16 in the file
""",
        ),
        Code(
            'TL0809',
            "a `weights` rule that cannot be applied",
            """\
A rule's `{x}` must be a name, at most once in its pattern, and its target may repeat only
the parts its pattern names. The block is not compared with the file until its rules apply.
""",
            """\
error[TL0809]: this rule cannot be applied: the target's `{q}` is not in the pattern `{l}.{p}`
  --> bad_rule.tl:13:5
   |
13 |     "{l}.{p}" -> "{l}.{q}"
   |     ^^^^^^^^^^^^^^^^^^^^^^
""",
        ),
        Code(
            'TL0810',
            "`freeze` names no layer of the model",
            """\
`freeze = [wte, wpe, h[0:6]]` lists layers (or parameters) of the trained instance:
names, paths into nested models (`h[1].attn`), and slices of a layer list within its length.
""",
            """\
error[TL0810]: `h[0:4]` reaches past `h`'s 3 layers
  --> freeze_unknown.tl:23:14
   |
23 |     freeze = [inp, h[0:4], outt, h[1].fc]
   |              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: write `h[0:3]`
""",
        ),
        Code(
            'TL0811',
            "a LoRA target names no Linear layer",
            """\
`lora = LoRA(rank=8, targets=[c_attn, c_fc])` adds adapters to every Linear whose name is a
target or ends in `.target`: the model's own Linear layers and the projections inside its
attention layers (`c_attn`, `c_proj`, `out_proj`).
""",
            """\
error[TL0811]: no Linear layer of the model is named `ou`
  --> freeze_unknown.tl:24:12
   |
24 |     lora = LoRA(rank=2, targets=[fc, ou])
   |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: did you mean `out`?
""",
        ),
        Code(
            'TL0812',
            "a `weights` rule's tensors cannot be joined or split into the model's",
            """\
A rule with several names on a side joins the file's tensors (`torch.cat` along its `along`
dim, 0 unless it says, after any `transposed`) or splits one into the model's tensors, each
as large along that dim as the model's. The joined tensors must agree in every other dim,
and the two sides must have the same shape once joined.
""",
            """\
error[TL0812]: `attn.c_attn.weight` is [8, 20] ([20, 8] transposed), the model's `q.weight` [8, 8], `k.weight` [8, 8] and `v.weight` [8, 8] joined along dim 0 are [24, 8]
  --> split_sizes.tl:15:5
   |
15 |     "attn.c_attn.weight" -> ["q.weight", "k.weight", "v.weight"] along 0 transposed
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ shapes differ
""",
        ),
        Code(
            'TL0813',
            "a `weights` rule joins tensors the file does not all have",
            """\
The patterns of a join (`["layer.{i}.query.weight", "layer.{i}.key.weight", ...] -> ...`)
are matched with the same parts: for each tensor one pattern finds, the others must find
their partner (the same layer's `key`, `value`).
""",
            """\
error[TL0813]: `layer.0.query.weight` is joined with `layer.0.value.weight`, which `w.safetensors` lacks
  --> fuse_missing.tl:13:5
   |
13 |     ["layer.{i}.query.weight", "layer.{i}.key.weight", "layer.{i}.value.weight"] -> "attn.{i}.in_proj_weight"
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ this rule joins tensors the file has not
   |
   = help: each pattern of a join must match a tensor for the same parts
""",
        ),
        Code(
            'TL0814',
            "config.json disagrees with the instance's config",
            """\
When the source is a Hugging Face folder, its config.json is compared with the instance's
config values: each `config "num_attention_heads" -> n_head` line of the `weights` block,
and every integer config of the model named as a config.json entry (`n_embd`, `vocab_size`).
Weights of another size would fail later, tensor by tensor; this names the cause.
""",
            """\
error[TL0814]: config.json has `num_labels` 2, the model's `classes` is 3
  --> config.tl:11:5
   |
11 |     config "num_labels" -> classes
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ `net` has `classes` 3
   |
   = help: build `net` with `classes=2`, or load weights of its size
""",
        ),
        Code(
            'TL0815',
            "a `config` line names an entry that is not there",
            """\
`config "KEY" -> name` compares config.json's `KEY` with the instance's config `name`: the
source must have a config.json (a Hugging Face folder), with that key, and the model that
config.
""",
            """\
error[TL0815]: config.json has no `num_label`
  --> config_unknown.tl:11:5
   |
11 |     config "num_label" -> classes
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: did you mean `num_labels`?
""",
        ),
        Code(
            'TL0818',
            "a `@weights` map names a model its file does not declare",
            """\
`@weights NAME for Model:` in an .nml file declares a map of a model of the same file, so
that the map sits beside the model whose names it targets.
""",
            """\
error[TL0818]: `Nett` is not a model of this file
 --> stray.nml:9:17
  |
9 | @weights hf for Nett:
  |                 ^^^^ a map is declared beside its model
  |
  = help: did you mean `Net`?
""",
        ),
        Code(
            'TL0819',
            "two `@weights` maps of one model share a name",
            """\
A `weights` block picks a model's map by its name (`using hf`), so each map of a model
needs its own.
""",
            """\
error[TL0819]: `Net` has two weights maps named `hf`
  --> stray.nml:15:10
   |
15 | @weights hf for Net:
   |          ^^ second map
  ::: stray.nml:12:10
12 | @weights hf for Net:
   |          -- first map
   |
   = help: rename one
""",
        ),
        Code(
            'TL0820',
            "`using` names a map the model does not have",
            """\
`weights net from "gpt2" using hf` applies the `@weights hf for Model:` map declared in
the .nml file of `net`'s model; that model has no map of that name.
""",
            """\
error[TL0820]: `Net` has no weights map `plane`
 --> unknown_map.tl:8:40
  |
8 | weights net from "w.safetensors" using plane
  |                                        ^^^^^ `net` is a `Net`
  |
  = help: did you mean `plain`?
""",
        ),
        Code(
            'TL0821',
            "a `weights` block without rules, and no one map to apply",
            """\
A `weights` block with no rules of its own applies its model's `@weights` map when the
model has exactly one. With none, the block must write the rules; with several, it must
name one with `using`.
""",
            """\
error[TL0821]: `Net` has 2 weights maps (`hf`, `torchvision`): the block must say which
 --> several.tl:8:18
  |
8 | weights net from "w.safetensors"
  |                  ^^^^^^^^^^^^^^^ which names map to which?
  |
  = help: write `using hf` after the source
""",
        ),
    )),
    Section('TL01xx: constructs IR generation cannot represent', """\
Reported by `tensorloom/frontend/irgen.py` after parsing succeeded.
""", (
        Code(
            'TL0130',
            'a statement that is not supported here (`if`/`for` in a model or script)',
            '',
            """\
error[TL0130]: `for` is not supported here
 --> m.tl:3:9
  |
3 |         for i in range(3):
  |         ^^^^^^^^^^^^^^^^^^
  |
  = help: write straight-line code; branch on values with arithmetic or masks
""",
        ),
        Code(
            'TL0132',
            'assignment to something other than a name or an index of one',
            '',
            """\
error[TL0132]: only a plain name or an index of one can be assigned to
 --> m.tl:3:9
  |
3 |         x.data = 1
  |         ^^^^^^
  |
  = help: bind a new name with `let`, or assign into a tensor the forward named (`x[:, 0] = y`)
""",
        ),
        Code(
            'TL0133',
            'a default value on a method parameter',
            '',
            """\
error[TL0133]: method parameters cannot have default values
 --> m.tl:2:31
  |
2 |     fn forward(self, x, scale=2):
  |                               ^
  |
  = help: make it a config parameter of the model
""",
        ),
        Code(
            'TL0134',
            'an expression that must be known at compile time',
            '',
            """\
error[TL0134]: this expression must be known at compile time
 --> m.tl:2:23
  |
2 |     layer fc = Linear(x[0], 10)
  |                       ^^^^
  |
  = help: use literals, config parameters and arithmetic on them
""",
        ),
        Code(
            'TL0135',
            'code after `return`',
            '',
            """\
error[TL0135]: code after `return` never runs
 --> m.tl:4:9
  |
4 |         x = relu(x)
  |         ^^^^^^^^^^^
  |
  = help: remove it, or move the `return` after it
""",
        ),
        Code(
            'TL0136',
            'a call or pipe stage that does not name what it calls',
            '',
            """\
error[TL0136]: only a named function, layer or method can be called
 --> m.tl:3:16
  |
3 |         return self.make(x)(x)
  |                ^^^^^^^^^^^^
""",
        ),
        Code(
            'TL0137',
            "a train block's model or data that is not a name",
            '',
            """\
error[TL0137]: the model of a train block must be a name
 --> m.tl:1:7
  |
1 | train nets[0] on data:
  |       ^^^^^^^
  |
  = help: bind it first: `let name = ...`, then `train name on ...`
""",
        ),
        Code(
            'TL0138',
            'slice bounds that are not integers',
            """\
A slice bound is an integer: a literal, a config, a size (`x[:, :T]`), a loop counter (`w[:, i:i + 1]`) or arithmetic on them, typed with its value where the checker knows it.
""",
            """\
error[TL0138]: slice bounds must be integers
 --> m.tl:3:23
  |
3 |         return x[:, 0:1.5]
  |                       ^^^
  |
  = help: write an integer, a config or a size (`x[:, :T]`), or arithmetic on them
""",
        ),
        Code(
            'TL0139',
            'an unknown type annotation, or a layer that is not a constructor call',
            '',
            """\
error[TL0139]: unknown type `Matrix`
 --> m.tl:2:25
  |
2 |     fn forward(self, x: Matrix):
  |                         ^^^^^^
  |
  = help: use one of `Tensor`, `int`, `float`, `bool`, `str`, `list`, `tuple`
""",
        ),
        Code(
            'TL0140',
            'model arguments given by position',
            '',
            """\
error[TL0140]: config overrides must be given by keyword
 --> m.tl:3:13
  |
3 | let net = M(256)
  |             ^^^
  |
  = help: write `M(name=value)`
""",
        ),
        Code(
            'TL0142',
            '`return` inside a loop or a branch',
            """\
A forward's loops and branches carry the names they reassign; a value leaves them by a name, not by `return`.
""",
            """\
error[TL0142]: `return` inside a loop or a branch is not supported
 --> return_in_branch.nml:7:13
  |
7 |             return fc(x)
  |             ^^^^^^^^^^^^
  |
  = help: assign the result to a name in each branch and `return` it after
""",
        ),
        Code(
            'TL0143',
            'a layer of a layer list applied with keywords',
            '',
            """\
error[TL0143]: a layer of a layer list takes its inputs by position
 --> m.nml:7:17
  |
7 |             x = block(x, causal=true)
  |                 ^^^^^^^^^^^^^^^^^^^^^
  |
  = help: options such as `causal=true` belong in the layer's constructor
""",
        ),
        Code(
            'TL0144',
            'a layer list that does not run over `range(n)` or a list',
            """\
A layer list (`nn.ModuleList`) builds one layer per position: `[Block(d) for _ in range(n)]` (copies), `[Block(d, stride=2 if i == 0 else 1) for i in range(n)]` (arguments that use the position) or `[Stage(w) for w in widths]` (one per element of a list config). `range` takes one argument, the count.
""",
            """\
error[TL0144]: a layer list runs over `range(n)` or a list of values
 --> layer_list_form.nml:7:36
  |
7 |         g = [Linear(8, 8) for _ in 5]
  |                                    ^
  |
  = help: write `[Block(d) for i in range(n)]` or `[Stage(w) for w in widths]`
""",
        ),
        Code(
            'TL0145',
            '`for` over something that is neither a layer list nor a range',
            '',
            """\
error[TL0145]: `for` iterates over a layer list or a `range(...)`
 --> for_not_iterable.nml:6:22
  |
6 |         for layer in fc:
  |                      ^^
  |
  = help: declare a layer list, `h = [Block(d) for _ in range(n)]`, and write `for block in h:`, or loop `for i in range(n):`
""",
        ),
        Code(
            'TL0141',
            'extra positional arguments to `load_dataset`',
            '',
            """\
error[TL0141]: `load_dataset` takes the dataset name as its only positional argument
 --> m.tl:1:35
  |
1 | let data = load_dataset("digits", 64)
  |                                   ^^
  |
  = help: write `load_dataset("name", option=value)`
""",
        ),
    )),
    Section('TL03xx: names in methods (irgen)', '', (
        Code(
            'TL0330',
            'a `.tl` method without `self`',
            '',
            """\
error[TL0330]: method `forward` must take `self` first
 --> m.tl:2:8
  |
2 |     fn forward(x):
  |        ^^^^^^^
  |
  = help: write `fn forward(self, ...)`
""",
        ),
        Code(
            'TL0331',
            '`self` used as a value',
            '',
            """\
error[TL0331]: `self` cannot be used as a value
 --> m.tl:3:16
  |
3 |         return self
  |                ^^^^
  |
  = help: use one of its layers or config parameters, as in `self.fc1`
""",
        ),
        Code(
            'TL0332',
            'a model without a `forward` method',
            """\
PyTorch would raise `NotImplementedError` at the model's first call; a misspelt `forward` gets a did-you-mean.
""",
            """\
error[TL0332]: model `Net` has no `forward` method
 --> f.tl:1:7
  |
1 | model Net:
  |       ^^^
  |
  = help: rename `forwrd` to `forward`
""",
        ),
    )),
    Section('TL06xx: imports', """\
Imports are resolved relative to the importing file (`tensorloom/frontend/imports.py`).
An alias names the file's only model, else the model named like the alias, else the
model named like the file (ignoring case and underscores).
""", (
        Section('Reading source files (TL0601 to TL0604)', """\
Reported by `parse_file` before lexing.
""", (
            Code(
                'TL0601',
                'a file that cannot be read',
                """\
The file does not exist, is a directory, or cannot be read.
""",
                """\
error[TL0601]: cannot read `missing.tl`: no such file or directory
 --> missing.tl:1:1
""",
            ),
            Code(
                'TL0602',
                'a binary file',
                """\
The file contains NUL bytes in its first 8 KiB.
""",
                """\
error[TL0602]: `weights.tl` is a binary file, not TensorLoom source
 --> weights.tl:1:1
""",
            ),
            Code(
                'TL0603',
                'a file that is not valid UTF-8',
                """\
Source files are UTF-8 (a leading byte-order mark is allowed). The error points at the first invalid byte.
""",
                """\
error[TL0603]: `latin1.tl` is not valid UTF-8
 --> latin1.tl:2:7
  |
2 | // caf�
  |       ^ byte 0xe9 is not valid UTF-8
  |
  = help: save the file as UTF-8
""",
            ),
            Code(
                'TL0604',
                'a file that is neither .tl nor .nml',
                """\
`tlc` reads `.tl` scripts and `.nml` model files.
""",
                """\
error[TL0604]: unsupported file type `.py`
 --> train.py:1:1
  = help: TensorLoom reads `.tl` scripts and `.nml` model files
""",
            ),
        )),
        Code(
            'TL0610',
            'an imported file that does not exist',
            '',
            """\
error[TL0610]: cannot find `blocks/resnet.nml`
 --> train.tl:1:8
  |
1 | import blocks.resnet.nml as ResBlock
  |        ^^^^^^^^^^^^^^^^^ no file `blocks/resnet.nml`
  |
  = help: imports are relative to the importing file's folder, `.`
""",
        ),
        Code(
            'TL0611',
            'an import cycle',
            '',
            """\
error[TL0611]: import cycle: `blocks/a.nml` -> `blocks/b.nml` -> `blocks/a.nml`
 --> blocks/a.nml:1:8
  |
1 | import b.nml
  |        ^^^^^ this import starts the cycle
  |
  = help: move the shared models into a file that none of these imports
""",
        ),
        Code(
            'TL0612',
            'importing something other than an .nml file',
            '',
            """\
error[TL0612]: `helpers.tl` is not an .nml file
 --> train.tl:1:8
  |
1 | import "helpers.tl" as H
  |        ^^^^^^^^^^^^
  |
  = help: only .nml model files can be imported; move the model into one
""",
        ),
        Code(
            'TL0613',
            'an import alias that could name several models',
            '',
            """\
error[TL0613]: `Block` could name any of `Encoder`, `Decoder` in `two.nml`
 --> train.tl:1:19
  |
1 | import two.nml as Block
  |                   ^^^^^ ambiguous alias
  |
  = help: name the alias after one of the models, or import without `as` and use `Encoder`, `Decoder`
""",
        ),
        Code(
            'TL0614',
            'an import alias for a file without models',
            '',
            """\
error[TL0614]: `empty.nml` defines no model to import as `Block`
 --> train.tl:1:21
  |
1 | import empty.nml as Block
  |                     ^^^^^
""",
        ),
        Code(
            'TL0615',
            'a model defined twice',
            '',
            """\
error[TL0615]: model `Block` is defined twice
 --> train.tl:2:7
  |
2 | model Block:
  |       ^^^^^ second definition
 ::: block.nml:1:8
1 | @model Block:
  |        ----- first defined here
  |
  = help: rename one of them, or import the file with `as` and a new name
""",
        ),
        Code(
            'TL0616',
            'an import outside the program\'s folder',
            """\
Imports resolve inside the folder of the file being compiled (links followed), so a shared program cannot pull in, or make a diagnostic quote, a file elsewhere: an absolute path, a `../` chain or a link that leaves the folder is an error. `TENSORLOOM_ALLOW_OUTSIDE_IMPORTS=1` allows it. An import whose link points at a file that is not `.nml` is TL0612, and that file is never read.
""",
            """\
error[TL0616]: `../shared/blocks.nml` is outside the program's folder
 --> main.tl:1:8
  |
1 | import "../shared/blocks.nml" as Blocks
  |        ^^^^^^^^^^^^^^^^^^^^^^ imports stay inside `/home/me/project`
  |
  = help: copy the file into that folder, or set TENSORLOOM_ALLOW_OUTSIDE_IMPORTS=1 to allow it
""",
        ),
    )),
    Section('TL09xx: internal errors', '', (
        Code(
            'TL0901',
            'a pass crashed or left IR that does not verify',
            """\
A bug in TensorLoom, not in the program: every command exits with status 3 after it (1 is for errors in the program). A pass the pipeline names that is not registered, or whose module fails to import, is reported the same way.
""",
            """\
error[TL0901]: internal compiler error: pass `shape-inference` crashed: KeyError('B')
 --> mnist.tl:1:1
  |
1 | // Define an imperative neural network
  | ^
  |
  = note: this is a bug in TensorLoom, not in your program
  = help: please report it at https://github.com/techxsarwar/tensorloom/issues with this file; set TENSORLOOM_DEBUG=1 for a traceback
""",
        ),
    )),
)
