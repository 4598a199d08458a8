// `distributed = "fsdp"` (insert-ddp's train.fsdp_shard): the command line gets `--consolidate`,
// the py-op evaluation is `_evaluate_whole`, and `evaluate` calls it with the weights gathered.
// RUN: tl-opt %s -p train-config,convert-train-to-torch | filecheck %s

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
    train.set "epochs" = 3 : i64
    train.set "optimizer" = #nml.call<"AdamW", [], {lr = 3.000000e-03 : f64, weight_decay = 1.000000e-02 : f64}>
    train.set "loss" = #nml.call<"CrossEntropy", [], {label_smoothing = 1.000000e-01 : f64}>
    train.checkpoint every 2 "epochs"
    train.autocast "bfloat16"
    train.fsdp_shard @net []
    train.compile @net mode "reduce-overhead"
  }
}

// The evaluation (before the set-up): `evaluate` gathers the whole weights for `_evaluate_whole`.
// CHECK:      py.def @_evaluate_whole(trainer : %{{.*}}, model : %{{.*}} = %{{.*}}) -> %{{.*}} decorators [%{{.*}}] {
// CHECK:      py.def @evaluate(trainer : %{{.*}}, model : %{{.*}} = %{{.*}}) -> %{{.*}} {
// CHECK:        %[[UNSET:.*]] = py.compare ["is"] %{{.*}}, %{{.*}}
// CHECK-NEXT:   %[[T:.*]] = py.name "trainer"
// CHECK-NEXT:   %[[TM:.*]] = py.attribute %[[T]], "model"
// CHECK-NEXT:   %[[M:.*]] = py.name "model"
// CHECK-NEXT:   %[[WHICH:.*]] = py.ifexp %[[TM]] if %[[UNSET]] else %[[M]]
// CHECK-NEXT:   %[[GATHER:.*]] = py.name "gathered_parameters"
// CHECK-NEXT:   %[[CM:.*]] = py.call %[[GATHER]](%[[WHICH]])
// CHECK-NEXT:   py.with %[[CM]] {
// CHECK:          %[[WHOLE:.*]] = py.name "_evaluate_whole"
// CHECK-NEXT:     %[[R:.*]] = py.call %[[WHOLE]](%{{.*}}, %{{.*}})
// CHECK-NEXT:     py.return %[[R]]
// CHECK-NEXT:   }
// CHECK-NEXT: }

// CHECK:      py.def @parse_args(argv : %{{.*}} = %{{.*}}) -> %{{.*}} {
// CHECK:        py.name "training_arguments"
// CHECK:        py.call %{{.*}}(%{{.*}}, epochs = {{.*}}, serve = %{{.*}}, consolidate = %{{.*}})

// `build_trainer` shards the model (gathered in the precision plan's dtype) before the optimizer
// steps its shards, with no fused kernels; the model trains sharded in place, not DDP-wrapped.
// CHECK:      py.def @build_trainer(args : %{{.*}}, ctx : %{{.*}}) -> %{{.*}} {
// CHECK:        py.comment "FSDP2: {{.*}}"
// CHECK:        %[[MODEL:.*]] = py.name "model"
// CHECK-NEXT:   %[[BLOCKS:.*]] = py.name "FSDP_BLOCKS"
// CHECK-NEXT:   %[[PLAN:.*]] = py.name "plan"
// CHECK-NEXT:   %[[DTYPE:.*]] = py.attribute %[[PLAN]], "autocast_dtype"
// CHECK-NEXT:   %[[SHARD:.*]] = py.name "shard_model"
// CHECK-NEXT:   %[[SHARDED:.*]] = py.call %[[SHARD]](%[[MODEL]], %[[BLOCKS]], param_dtype = %[[DTYPE]])
// CHECK-NEXT:   py.expr %[[SHARDED]]
// CHECK:        %[[ADAMW:.*]] = py.name "torch.optim.AdamW"
// CHECK-NEXT:   py.call %[[ADAMW]](%{{[0-9]+}}, lr = %{{[0-9]+}}, weight_decay = %{{[0-9]+}})
// CHECK-NOT:    py.name "DistributedDataParallel"
// CHECK:        py.comment "sharded in place"
// CHECK:        %[[RECIPE:.*]] = py.name "build_recipe"
// CHECK-NEXT:   py.call %[[RECIPE]](%{{.*}}, %{{.*}}, %{{.*}})
// CHECK:      py.def @build_recipe(model : %{{.*}}, ctx : %{{.*}}, plan : %{{.*}}) -> %{{.*}} {

// `resume` reads a sharded save, the EMA's shards too when there is an EMA.
// CHECK:      py.def @resume(trainer : %{{.*}}, path : %{{.*}}) -> %{{.*}} {
// CHECK:        %[[EMA:.*]] = py.ifexp %{{.*}} if %{{.*}} else %{{.*}}
// CHECK-NEXT:   %[[EMA_NAME:.*]] = py.name "ema_module"
// CHECK-NEXT:   py.assign %[[EMA_NAME]] = %[[EMA]]
// CHECK:        %[[SHARDED:.*]] = py.name "load_sharded_checkpoint"
// CHECK-NEXT:   py.call %[[SHARDED]](%{{.*}}, model = %{{.*}}, optimizer = %{{.*}}, scaler = %{{.*}}, scheduler = %{{.*}}, loader = %{{.*}}, ema = %{{.*}})

// `serve_requests`: every rank gives its shards to rank 0's unsharded copy, which serves.
// CHECK:      py.def @serve_requests(trainer : %{{.*}}, args : %{{.*}}) -> %{{.*}} {
// CHECK:        %[[NET:.*]] = py.name "Classifier"
// CHECK-NEXT:   %[[COPY:.*]] = py.call %[[NET]]()
// CHECK-NEXT:   %[[UNSHARDED:.*]] = py.name "unsharded"
// CHECK-NEXT:   py.assign %[[UNSHARDED]] = %[[COPY]]
// CHECK:        %[[WHOLE_MODEL:.*]] = py.name "whole_model"
// CHECK-NEXT:   %[[WHOLE:.*]] = py.call %[[WHOLE_MODEL]](%{{.*}}, %{{.*}})
