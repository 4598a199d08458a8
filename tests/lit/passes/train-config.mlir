// train-config: a block's settings and checkpoint policy become one train.config, every
// field the block leaves out at its catalogue default (catalogue/train_keys.py); an
// optimizer without `lr` gets torch's default for it, a schedule its records' defaults
// (unless the twin length is given), `accumulate_steps` is `grad_accum`, `max_steps` without
// `epochs` leaves `epochs` none. The pass is idempotent.
// RUN: tl-opt %s -p train-config | filecheck %s
// RUN: tl-opt %s -p train-config,train-config | filecheck %s

builtin.module {
  train.dataset @data = "digits" {flatten = true}
  train.loop @defaults on @data {
    train.set "seed" = 0 : i64
  }
  train.loop @set on @data {
    train.set "epochs" = 3 : i64
    train.set "batch_size" = 32 : i64
    train.set "optimizer" = #nml.call<"RMSprop", [], {momentum = 9.000000e-01 : f64}>
    train.set "loss" = #nml.call<"MSE", [], {}>
    train.set "precision" = "bf16"
    train.set "compile" = "max-autotune"
    train.set "lr_schedule" = "warmup"
    train.set "accumulate_steps" = 4 : i64
    train.set "grad_clip" = 1.000000e+00 : f64
    train.checkpoint every 50 "steps"
  }
  train.loop @steps on @data {
    train.set "max_steps" = 100 : i64
    train.set "compile" = false
    train.set "lr_schedule" = #nml.call<"warmup", [], {warmup_epochs = 2 : i64}>
  }
}

// CHECK:      train.loop @defaults on @data {
// CHECK-NEXT:   train.config {epochs = 10 : i64, batch_size = 64 : i64, batch_size_set = false,
// CHECK-SAME:     optimizer = "Adam", optimizer_args = {lr = 1.000000e-03 : f64},
// CHECK-SAME:     loss = "CrossEntropy", loss_args = {}, loss_fn = false, objective = none, samples = none, target = none, precision = "auto",
// CHECK-SAME:     distributed = none, compile = "auto", compile_mode = "reduce-overhead",
// CHECK-SAME:     lr_schedule = "none", lr_schedule_args = {}, grad_clip = none, grad_accum = 1 : i64,
// CHECK-SAME:     decay_groups = true, ema = none, early_stopping = none, keep_best = none,
// CHECK-SAME:     eval_every = none, max_steps = none, seed = 0 : i64,
// CHECK-SAME:     activation_checkpointing = false, val_every = 1 : i64, log_every = none,
// CHECK-SAME:     metrics = [], freeze = [], lora = none, checkpoint_every = none, checkpoint_unit = "epochs"}
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @set on @data {
// CHECK-NEXT:   train.config {epochs = 3 : i64, batch_size = 32 : i64, batch_size_set = true,
// CHECK-SAME:     optimizer = "RMSprop", optimizer_args = {momentum = 9.000000e-01 : f64, lr = 1.000000e-02 : f64},
// CHECK-SAME:     loss = "MSE", loss_args = {}, loss_fn = false, objective = none, samples = none, target = none, precision = "bf16",
// CHECK-SAME:     compile = "on", compile_mode = "max-autotune",
// CHECK-SAME:     lr_schedule = "warmup", lr_schedule_args = {warmup_steps = 100 : i64},
// CHECK-SAME:     grad_clip = 1.000000e+00 : f64, grad_accum = 4 : i64,
// CHECK-SAME:     checkpoint_every = 50 : i64, checkpoint_unit = "steps"}
// CHECK-NEXT: }
// CHECK-NEXT: train.loop @steps on @data {
// CHECK-NEXT:   train.config {epochs = none,
// CHECK-SAME:     compile = "off",
// CHECK-SAME:     lr_schedule = "warmup", lr_schedule_args = {warmup_epochs = 2 : i64},
// CHECK-SAME:     max_steps = 100 : i64,
// CHECK-NEXT: }
