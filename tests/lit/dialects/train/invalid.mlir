// Each verifier message of the train dialect, one case per split.
// RUN: tl-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

train.loop @net on @data {
  train.checkpoint every 0 "epochs"
}
// CHECK: checkpoint interval must be positive, got 0

// -----

train.loop @net on @data {
  train.checkpoint every 5 "hours"
}
// CHECK: checkpoint unit must be one of "epochs", "steps", got "hours"

// -----

train.loop @net on @data {
  train.set "" = 1 : i64
}
// CHECK: setting key must not be empty

// -----

train.set "epochs" = 1 : i64
// CHECK: 'train.set' expects parent op 'train.loop'

// -----

train.dataset @data = "digits" {flatten = true} {option_locs = []}
// CHECK: `option_locs` has 0 entries, expected 1

// -----

train.loop @net on @data {
  train.autocast "float64"
}
// CHECK: autocast dtype must be one of "float16", "bfloat16", "float32", "auto", got "float64"

// -----

train.loop @net on @data {
  train.compile @net mode "fast"
}
// CHECK: compile mode must be one of "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", got "fast"

// -----

train.loop @net on @data {
  train.activation_checkpoint @net []
}
// CHECK: activation_checkpoint needs at least one layer

// -----

train.autocast "float16"
// CHECK: 'train.autocast' expects parent op 'train.loop'

// -----

train.loop @net on @data {
  train.config {epochs = 10 : i64}
}
// CHECK: train.config lacks batch_size, batch_size_set,

// -----

train.loop @net on @data {
  train.config {epochs = "ten", batch_size = 64 : i64, batch_size_set = false, optimizer = "Adam", optimizer_args = {}, loss = "CrossEntropy", loss_args = {}, loss_fn = false, objective = none, samples = none, target = none, precision = "auto", distributed = false, compile = "auto", compile_mode = "reduce-overhead", lr_schedule = "none", lr_schedule_args = {}, grad_clip = none, grad_accum = 1 : i64, decay_groups = true, ema = none, early_stopping = none, keep_best = none, eval_every = none, max_steps = none, seed = 0 : i64, activation_checkpointing = false, val_every = 1 : i64, log_every = none, metrics = [], freeze = [], lora = none, checkpoint_every = none, checkpoint_unit = "epochs"}
}
// CHECK: train.config field `epochs` must be int

// -----

train.weights "net" from "gpt2" {sources = ["a", "b"], targets = ["x"], transposed = [false, false]}
// CHECK: `sources`, `targets` and `transposed` must have one entry each

// -----

train.weights "net" from "gpt2" {sources = ["a", ["b", 3]], targets = ["x", "y"], transposed = [false, false]}
// CHECK: a rule's names are a string or an array of strings

// -----

train.weights "net" from "gpt2" {sources = ["a"], targets = ["x"], transposed = [false], along = [0 : i64, 1 : i64]}
// CHECK: `along` has 2 entries, expected 1

// -----

train.weights "net" from "gpt2" {sources = ["a"], targets = ["x"], transposed = [false], config_keys = ["n"]}
// CHECK: `config_keys` and `config_names` must have one entry each

// -----

train.loop @net on @data {
  train.carry ""
}
// CHECK: carried value's name must not be empty

// -----

train.loop @net on @data {
  train.carry "state" {carried = !nml.tensor<[2, B, 64], f32>}
}
// CHECK: a carried value with a type needs its initial value

// -----

train.carry "state" = #nml.none
// CHECK: 'train.carry' expects parent op 'train.loop'
