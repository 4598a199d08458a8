// The loop's records and the metrics' evaluation are py ops (train_records.py): `metrics`
// evaluates through `batch_metrics` and a dict comprehension of the means; `ema` adds the
// EMA's `ema_` keys; `val_every = 2` validates only when due; `eval_every` writes
// `step_validation`, which calls `after_validation` (best.pt) with `keep_best`. No
// insert-amp or insert-ddp marker: no autocast, no all-reduce, and rank 0 is every process.
// RUN: tl-opt %s -p convert-train-to-torch | filecheck %s

builtin.module {
  torch.script from "mnist.tl" {
    torch.module_class @Classifier() : "nn.Module" {
      %linear = py.name "nn.Linear"
      %in = py.constant 64 : i64
      %out = py.constant 10 : i64
      %layer = py.call %linear(%in, %out)
      torch.submodule "fc1" = %layer
      py.def @forward(self, x) {
      ^bb0(%self: !py.object, %x: !py.object):
        %s = py.name "self"
        %fc1 = py.attribute %s, "fc1"
        %0 = py.call %fc1(%x)
        py.return %0
      }
    }
  }
  nml.instance @net = @Classifier {}
  train.dataset @data = "digits" {flatten = true}
  train.loop @net on @data {
    train.config {epochs = 3 : i64, batch_size = 64 : i64, batch_size_set = false, optimizer = "Adam", optimizer_args = {lr = 1.000000e-03 : f64}, loss = "CrossEntropy", loss_args = {}, loss_fn = false, objective = none, samples = none, target = none, precision = "auto", distributed = none, compile = "auto", compile_mode = "reduce-overhead", lr_schedule = "none", lr_schedule_args = {}, grad_clip = none, grad_accum = 1 : i64, decay_groups = true, ema = 9.900000e-01 : f64, early_stopping = none, keep_best = "val_accuracy", eval_every = 5 : i64, max_steps = none, seed = 0 : i64, activation_checkpointing = false, val_every = 2 : i64, log_every = none, metrics = [{kind = "accuracy", name = "accuracy", k = 1 : i64}, {kind = "top_k", name = "top_k", k = 3 : i64}], freeze = [], lora = none, checkpoint_every = none, checkpoint_unit = "epochs"}
  }
}

// CHECK:      py.def @evaluate(trainer : %{{.*}}, model : %{{.*}} = %{{.*}}) -> %{{.*}} decorators [%{{.*}}] {
// CHECK-NOT:    py.name "autocast"
// CHECK:        %[[BATCH:.*]] = py.name "batch_metrics"
// CHECK-NEXT:   py.call %[[BATCH]](%{{.*}}, %xb{{.*}}, %yb{{.*}})
// CHECK-NOT:    py.name "all_reduce_sum"
// CHECK:        %[[PAIRS:.*]] = py.call %{{.*}}(%{{.*}}, %{{.*}}, strict = %{{.*}})
// CHECK-NEXT:   %[[MEANS:.*]] = py.comprehension "dict" %[[PAIRS]] attributes {targets = 2 : i64} {
// CHECK-NEXT:   ^bb0(%[[KEY:.*]]: !py.object, %[[TOTAL:.*]]: !py.object):
// CHECK-NEXT:     %[[COUNT:.*]] = py.name "count"
// CHECK-NEXT:     %[[MEAN:.*]] = py.binop "/" %[[TOTAL]], %[[COUNT]]
// CHECK-NEXT:     py.yield %[[KEY]], %[[MEAN]]
// CHECK-NEXT:   }

// CHECK:      py.def @batch_metrics(output : %{{.*}}, inputs : %{{.*}}, target : %{{.*}}) -> %{{.*}} {
// CHECK:        %[[ACCURACY:.*]] = py.name "batch_accuracy"
// CHECK-NEXT:   %[[FIRST:.*]] = py.call %[[ACCURACY]](%{{.*}}, %{{.*}})
// CHECK:        %[[TOP_K:.*]] = py.name "batch_top_k_accuracy"
// CHECK-NEXT:   %[[SECOND:.*]] = py.call %[[TOP_K]](%{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT:   %[[LIST:.*]] = py.list[%[[FIRST]], %[[SECOND]]]

// CHECK:      py.def @validation_record(trainer : %{{.*}}) -> %{{.*}} {
// CHECK:        py.if %{{.*}} {
// CHECK:          %[[RENAMED:.*]] = py.comprehension "dict" %{{.*}} attributes {targets = 2 : i64} {
// CHECK-NEXT:     ^bb0(%[[K:.*]]: !py.object, %[[V:.*]]: !py.object):
// CHECK-NEXT:       %[[EMA_KEY:.*]] = py.fstring "ema_{}"(%[[K]])
// CHECK-NEXT:       %[[NONE:.*]] = py.constant #py.none
// CHECK-NEXT:       %[[KEPT:.*]] = py.compare ["is not"] %[[V]], %[[NONE]]
// CHECK-NEXT:       py.yield %[[EMA_KEY]], %[[V]], %[[KEPT]]
// CHECK:      py.def @_as_record(result : %{{.*}}) -> %{{.*}} {

// CHECK:      py.def @step_validation(trainer : %{{.*}}, epoch : %{{.*}}) -> %{{.*}} {
// CHECK-NOT:    "is_main"
// CHECK:        %[[AFTER:.*]] = py.name "after_validation"
// CHECK-NEXT:   py.call %[[AFTER]](%{{.*}}, %{{.*}})
// CHECK:      py.def @after_validation(

// The epoch's record is runtime/trainer.py's `epoch_record`, in `_run`'s loop: validation every
// VAL_EVERY epochs (else a record without it), the mean loss's one `.item()`, no all-reduce.
// CHECK:      py.def @_run(
// CHECK:        %[[EVERY:.*]] = py.name "VAL_EVERY"
// CHECK:        %[[DUE:.*]] = py.name "due"
// CHECK-NEXT:   py.assign %[[DUE]] = %{{.*}}
// CHECK-NEXT:   %[[IS_DUE:.*]] = py.name "due"
// CHECK-NEXT:   py.if %[[IS_DUE]] {
// CHECK:          py.name "validation_record"
// CHECK:        } else {
// CHECK:          py.dict {%{{.*}} : %{{.*}}}
// CHECK-NOT:    py.name "all_reduce_mean"
// CHECK:        %[[ITEM:.*]] = py.attribute %{{.*}}, "item"
// CHECK:        %[[RECORD:.*]] = py.name "epoch_record"
