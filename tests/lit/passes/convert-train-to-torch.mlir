// A train block and its markers become the script's sections around the model class.
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
    train.ddp_wrap @net
    train.compile @net mode "reduce-overhead"
  }
}

// CHECK:      torch.script from "mnist.tl" {
// CHECK-NEXT:   py.from_import "__future__" ["annotations"]
// CHECK:        py.from_import "torch.nn.parallel" ["DistributedDataParallel"]
// The header is one comment paragraph; the settings are module-level assignments
// (train_settings.py), annotated where they may be None, each note an end-of-line comment.
// CHECK-NEXT:   py.comment "Trains `Classifier` on `digits`, as `mnist.tl` says.{{.*}}torchrun --nproc_per_node=2 mnist.py{{.*}}"
// CHECK-NEXT:   py.comment "---- settings: the train block's values; the command line overrides some ----"
// CHECK-NEXT:   %[[THREE:[0-9]+]] = py.constant 3 : i64
// CHECK-NEXT:   %[[EPOCHS:[0-9]+]] = py.name "EPOCHS"
// CHECK-NEXT:   py.assign %[[EPOCHS]] = %[[THREE]]
// CHECK:        %[[BATCH:[0-9]+]] = py.name "BATCH_SIZE"
// CHECK-NEXT:   py.assign %[[BATCH]] = %{{[0-9]+}} comment "`batch_size` was not set in the train block"
// CHECK:        %[[LR:[0-9]+]] = py.constant 3.000000e-03 : f64
// CHECK-NEXT:   %[[LR_NAME:[0-9]+]] = py.name "LEARNING_RATE"
// CHECK-NEXT:   py.assign %[[LR_NAME]] = %[[LR]]
// CHECK-NEXT:   %[[BF16:[0-9]+]] = py.constant "bf16"
// CHECK-NEXT:   %[[PRECISION:[0-9]+]] = py.name "PRECISION"
// CHECK-NEXT:   py.assign %[[PRECISION]] = %[[BF16]] comment
// CHECK-NEXT:   %[[EVERY:[0-9]+]] = py.constant 2 : i64
// CHECK-NEXT:   %[[INT:[0-9]+]] = py.name "int"
// CHECK-NEXT:   %[[NONE_TYPE:[0-9]+]] = py.constant #py.none
// CHECK-NEXT:   %[[OPTIONAL:[0-9]+]] = py.binop "|" %[[INT]], %[[NONE_TYPE]]
// CHECK-NEXT:   %[[CHECKPOINT_EVERY:[0-9]+]] = py.name "CHECKPOINT_EVERY"
// CHECK-NEXT:   py.assign %[[CHECKPOINT_EVERY]] : %[[OPTIONAL]] = %[[EVERY]] comment "epochs"
// CHECK:        %[[MODE:[0-9]+]] = py.constant "reduce-overhead"
// CHECK:        %[[MODE_NAME:[0-9]+]] = py.name "COMPILE_MODE"
// CHECK-NEXT:   py.assign %[[MODE_NAME]] : %{{[0-9]+}} = %[[MODE]] comment
// CHECK:        %[[OPTIONS:[0-9]+]] = py.dict {%{{[0-9]+}} : %{{[0-9]+}}}
// CHECK:        %[[OPTIONS_NAME:[0-9]+]] = py.name "DATASET_OPTIONS"
// CHECK-NEXT:   py.assign %[[OPTIONS_NAME]] : %{{[0-9]+}} = %[[OPTIONS]]
// CHECK-NEXT:   torch.module_class @Classifier()
// The loss is py ops (train_step.loss_ops): the catalogue loss with the block's arguments.
// CHECK:        py.def @loss_fn(output : %{{[0-9]+}}, target : %{{[0-9]+}}, reduction : %{{[0-9]+}} = %[[MEAN:[0-9]+]]) -> %{{[0-9]+}} {
// CHECK:          %[[SMOOTH:[0-9]+]] = py.constant 1.000000e-01 : f64
// CHECK-NEXT:     %[[RED:[0-9]+]] = py.name "reduction"
// CHECK-NEXT:     %[[OUT:[0-9]+]] = py.name "output"
// CHECK-NEXT:     %[[TGT:[0-9]+]] = py.name "target"
// CHECK-NEXT:     %[[CE:[0-9]+]] = py.name "F.cross_entropy"
// CHECK-NEXT:     %[[LOSS:[0-9]+]] = py.call %[[CE]](%[[OUT]], %[[TGT]], label_smoothing = %[[SMOOTH]], reduction = %[[RED]])
// CHECK-NEXT:     py.return %[[LOSS]]
// CHECK-NEXT:   }
// The batch's loss is runtime/trainer.py's `ModelLoss(model, loss_fn)`: no `BatchLoss` class.
// CHECK-NOT:    py.class @BatchLoss
// The step and evaluation are py ops (train_step.py): DDP's no_sync through `gradient_sync`
// (insert-ddp's marker), autocast inside it (insert-amp's), the loss beside the DDP model; the
// step mark for compile mode "reduce-overhead"; evaluation all-reduces its sums.
// CHECK:        py.comment "---- the training step ----"
// CHECK:        py.def @_forward_backward(trainer : %{{[0-9]+}}, xb : %{{[0-9]+}}, yb : %{{[0-9]+}}, sync : %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:          %[[MARK:[0-9]+]] = py.name "mark_step_begin"
// CHECK:          %[[SYNC:[0-9]+]] = py.name "gradient_sync"
// CHECK-NEXT:     %[[CTX:[0-9]+]] = py.call %[[SYNC]](%{{[0-9]+}}, %{{[0-9]+}})
// CHECK-NEXT:     py.with %[[CTX]] {
// CHECK:            %[[AUTOCAST:[0-9]+]] = py.name "autocast"
// CHECK-NEXT:       %[[AMP:[0-9]+]] = py.call %[[AUTOCAST]](%{{[0-9]+}}, %{{[0-9]+}})
// CHECK-NEXT:       py.with %[[AMP]] {
// CHECK:              py.name "loss_fn"
// CHECK:        py.def @_optimizer_step(trainer : %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK-NOT:      "clip_grad_norm_"
// CHECK:          py.attribute %{{[0-9]+}}, "update"
// The epoch loops over runtime/trainer.py's `epoch_batches`, and `end_epoch` ends it.
// CHECK:        py.comment "---- the epoch ----"
// CHECK:        py.def @train_one_epoch(
// CHECK:          %[[BATCHES:[0-9]+]] = py.name "epoch_batches"
// CHECK:          py.for %{{[0-9]+}}
// CHECK:            py.name "_forward_backward"
// CHECK:          py.name "end_epoch"
// The evaluation returns the record itself (one model, a catalogue loss): no
// `validation_record`; its sums are all-reduced.
// CHECK:        py.comment "---- evaluation ----"
// CHECK:        py.def @evaluate(trainer : %{{[0-9]+}}) -> %{{[0-9]+}} decorators [%{{[0-9]+}}] {
// CHECK:            py.name "autocast"
// CHECK:          %[[REDUCE:[0-9]+]] = py.name "all_reduce_sum"
// CHECK-NEXT:     py.call %[[REDUCE]](%{{[0-9]+}})
// CHECK:          py.dict {%{{[0-9]+}} : %{{[0-9]+}}, %{{[0-9]+}} : %{{[0-9]+}}}
// CHECK-NOT:    py.def @validation_record
// CHECK-NOT:    py.def @step_validation
// The command line is py ops: parse_args calls runtime/trainer.py's `training_arguments` with
// the block's defaults and the flag groups of the plan (train_cli.py): `precision` because
// insert-amp's marker is there, `serve`, no `download` for the digits.
// CHECK:        py.comment "---- the command line, the set-up and the run ----"
// CHECK:        py.def @parse_args(argv : %{{[0-9]+}} = %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:          %[[ARGUMENTS:[0-9]+]] = py.name "training_arguments"
// CHECK:          %[[PARSER:[0-9]+]] = py.call %[[ARGUMENTS]](%{{[0-9]+}}, epochs = %{{[0-9]+}}, batch_size = %{{[0-9]+}}, seed = %{{[0-9]+}}, checkpoint_dir = %{{[0-9]+}}, compile = %{{[0-9]+}}, precision = %{{[0-9]+}}, serve = %{{[0-9]+}})
// CHECK-NEXT:     %[[NAME:[0-9]+]] = py.name "parser"
// CHECK-NEXT:     py.assign %[[NAME]] = %[[PARSER]]
// CHECK-NEXT:     %[[PARSER_AGAIN:[0-9]+]] = py.name "parser"
// CHECK-NEXT:     %[[PARSE:[0-9]+]] = py.attribute %[[PARSER_AGAIN]], "parse_args"
// CHECK-NEXT:     %[[ARGV:[0-9]+]] = py.name "argv"
// CHECK-NEXT:     %[[ARGS:[0-9]+]] = py.call %[[PARSE]](%[[ARGV]])
// CHECK-NEXT:     py.return %[[ARGS]]
// CHECK-NEXT:   }
// The set-up is py ops (train_build.py); the `Trainer` record is runtime/trainer.py's.
// CHECK-NOT:    py.class @Trainer
// The loaders are py ops (train_data.py): `digits` is a built-in dataset, read by
// `load_digits` and resident on the device.
// CHECK:        py.def @build_loaders(args : %{{[0-9]+}}, ctx : %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:          %[[READ:[0-9]+]] = py.name "load_digits"
// CHECK-NEXT:     %[[SPLITS:[0-9]+]] = py.call %[[READ]](data_root = %{{[0-9]+}}, **%{{[0-9]+}})
// CHECK-NEXT:     py.assign %{{[0-9]+}} = %[[SPLITS]]
// CHECK:          %[[DEVICE:[0-9]+]] = py.name "DeviceLoader"
// CHECK-NEXT:     py.call %[[DEVICE]](*%{{[0-9]+}}, batch_size = %{{[0-9]+}}, shuffle = %{{[0-9]+}}, drop_last = %{{[0-9]+}}, seed = %{{[0-9]+}}, **%{{[0-9]+}})
// `build_trainer`: the model where the program makes it, AdamW over the weight-decay groups with
// the block's keywords and fused on CUDA, no scheduler (no `lr_schedule`), `should_compile`
// announced by rank 0, the compiled model wrapped in DDP when there are several processes,
// then the GradScaler.
// CHECK:        py.def @build_trainer(args : %{{[0-9]+}}, ctx : %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:          %[[NET:[0-9]+]] = py.name "Classifier"
// CHECK-NEXT:     %[[MADE:[0-9]+]] = py.call %[[NET]]()
// CHECK:          %[[PRECISION:[0-9]+]] = py.name "resolve_precision"
// CHECK:          %[[DECAY:[0-9]+]] = py.name "decay_param_groups"
// CHECK-NEXT:     %[[GROUPS:[0-9]+]] = py.call %[[DECAY]](%{{[0-9]+}})
// CHECK-NEXT:     %[[WD:[0-9]+]] = py.constant 1.000000e-02 : f64
// CHECK-NEXT:     %[[LR:[0-9]+]] = py.name "LEARNING_RATE"
// CHECK:          %[[CUDA:[0-9]+]] = py.compare ["=="] %{{[0-9]+}}, %{{[0-9]+}}
// CHECK-NEXT:     %[[ADAMW:[0-9]+]] = py.name "torch.optim.AdamW"
// CHECK-NEXT:     py.call %[[ADAMW]](%[[GROUPS]], lr = %[[LR]], weight_decay = %[[WD]], fused = %[[CUDA]])
// CHECK:          py.assign %{{[0-9]+}} = %{{[0-9]+}} comment "no `lr_schedule`"
// CHECK-NOT:      py.name "build_scheduler"
// CHECK:          %[[MODEL_LOSS:[0-9]+]] = py.name "ModelLoss"
// CHECK:          %[[SHOULD:[0-9]+]] = py.name "should_compile"
// CHECK-NEXT:     py.call %[[SHOULD]](%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, steps = %{{[0-9]+}}, batch_loss = %{{[0-9]+}}, loader = %{{[0-9]+}}, region = %{{[0-9]+}}, announce = %{{[0-9]+}})
// CHECK:          %[[MODULE:[0-9]+]] = py.name "nn.Module"
// CHECK-NEXT:     %[[TRAINED:[0-9]+]] = py.name "train_model"
// CHECK-NEXT:     %[[COMPILED:[0-9]+]] = py.name "compiled"
// CHECK-NEXT:     py.assign %[[TRAINED]] : %[[MODULE]] = %[[COMPILED]]
// CHECK:          %[[SEVERAL:[0-9]+]] = py.attribute %{{[0-9]+}}, "is_distributed"
// CHECK-NEXT:     py.if %[[SEVERAL]] {
// CHECK:            %[[DDP:[0-9]+]] = py.name "DistributedDataParallel"
// CHECK-NEXT:       py.call %[[DDP]](%{{[0-9]+}}, device_ids = %{{[0-9]+}})
// CHECK:          py.name "make_grad_scaler"
// CHECK:          %[[RECIPE:[0-9]+]] = py.name "build_recipe"
// CHECK-NEXT:     %[[RECIPE_MADE:[0-9]+]] = py.call %[[RECIPE]](%{{[0-9]+}}, %{{[0-9]+}})
// CHECK-NEXT:     %{{[0-9]+}} = py.name "scaler"
// CHECK-NEXT:     %{{[0-9]+}} = py.name "plan"
// CHECK-NEXT:     %[[TRAINER:[0-9]+]] = py.name "Trainer"
// CHECK-NEXT:     %[[BUILT:[0-9]+]] = py.call %[[TRAINER]]({{(%[0-9]+, )+}}%[[RECIPE_MADE]], scaler = %{{[0-9]+}}, plan = %{{[0-9]+}})
// CHECK-NEXT:     py.return %[[BUILT]]
// CHECK-NEXT:   }
// `build_recipe`: the best epoch by val_loss; a process group installs no signal handlers.
// CHECK:        py.def @build_recipe(model : %{{[0-9]+}}, ctx : %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:          py.comment "several processes must stop at one step: no handlers"
// CHECK:          %[[DISTRIBUTED:[0-9]+]] = py.attribute %{{[0-9]+}}, "is_distributed"
// CHECK-NEXT:     %[[ONE:[0-9]+]] = py.unop "not" %[[DISTRIBUTED]]
// CHECK-NEXT:     py.if %[[ONE]] {
// CHECK:            py.name "StopSignals"
// CHECK:          } else {
// CHECK-NEXT:     ^bb0:
// CHECK-NEXT:     }
// CHECK-NEXT:     %[[SIGNALS:[0-9]+]] = py.name "signals"
// CHECK-NEXT:     %[[METRIC:[0-9]+]] = py.constant "val_loss"
// CHECK-NEXT:     %[[BEST:[0-9]+]] = py.name "BestTracker"
// CHECK-NEXT:     %[[TRACKER:[0-9]+]] = py.call %[[BEST]](%[[METRIC]])
// CHECK-NEXT:     %[[RUN_RECIPE:[0-9]+]] = py.name "RunRecipe"
// CHECK-NEXT:     %[[MADE_RECIPE:[0-9]+]] = py.call %[[RUN_RECIPE]](best = %[[TRACKER]], signals = %[[SIGNALS]])
// CHECK-NEXT:     py.return %[[MADE_RECIPE]]
// `resume` and the saves are runtime/trainer.py's (rank 0 writes): no `after_validation`
// without `keep_best`.
// CHECK-NOT:    py.def @resume(
// CHECK-NOT:    py.def @after_validation
// CHECK-NOT:    py.def @save_if_due
// The run and the entry point are py ops too (train_loop.py): `train` checks the run before
// step 1 (`check_run`, rank 0 speaking), runs it inside its recipe and, under DDP, waits at a
// barrier; `_run` logs through rank 0's `log`, and its epoch loop is a py.for over the epochs;
// `main`'s handlers are a user's error (one line, exit 1) and a bug (source notes, re-raised),
// then the process group's teardown.
// CHECK:        py.def @train(args : %{{[0-9]+}}, ctx : %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:          %[[CHECK:[0-9]+]] = py.name "check_run"
// CHECK-NEXT:     py.call %[[CHECK]](%{{[0-9]+}}, main = %{{[0-9]+}})
// CHECK:          py.with %{{[0-9]+}} {
// CHECK:            %[[RUNS:[0-9]+]] = py.name "_run"
// CHECK-NEXT:       py.call %[[RUNS]](%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
// CHECK:          py.name "barrier"
// CHECK:        py.def @_run(trainer : %{{[0-9]+}}, args : %{{[0-9]+}}, ctx : %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:          %[[PRINT:[0-9]+]] = py.name "print"
// CHECK-NEXT:     %[[SILENT:[0-9]+]] = py.name "_silent"
// CHECK-NEXT:     %[[LOG:[0-9]+]] = py.ifexp %[[PRINT]] if %{{[0-9]+}} else %[[SILENT]]
// CHECK-NEXT:     %[[LOGNAME:[0-9]+]] = py.name "log"
// CHECK-NEXT:     py.assign %[[LOGNAME]] = %[[LOG]]
// CHECK:          %[[RANGE:[0-9]+]] = py.name "range"
// CHECK-NEXT:     %[[EPOCHS:[0-9]+]] = py.call %[[RANGE]](%{{[0-9]+}}, %{{[0-9]+}})
// CHECK-NEXT:     py.for %[[EPOCHS]] {
// CHECK-NEXT:     ^bb0(%[[EPOCH:epoch[_0-9]*]]: !py.object):
// CHECK:            %[[TRAIN:[0-9]+]] = py.name "train_one_epoch"
// CHECK-NEXT:       py.call %[[TRAIN]](%{{[0-9]+}}, %[[EPOCH]], %{{[0-9]+}})
// Under DDP the epoch's mean loss is all-reduced before its one `.item()`.
// CHECK:            %[[MEAN_LOSS:[0-9]+]] = py.name "all_reduce_mean"
// CHECK-NEXT:       %[[REDUCED:[0-9]+]] = py.call %[[MEAN_LOSS]](%{{[0-9]+}})
// CHECK-NEXT:       py.attribute %[[REDUCED]], "item"
// CHECK:            py.name "epoch_record"
// `checkpoint every 2 epochs`: `save_if_due` (runtime/trainer.py) after a complete epoch, then
// every rank waits at `barrier()`; `finish_run` saves last.pt and prints the summary.
// CHECK:            %[[DUE:[0-9]+]] = py.name "save_if_due"
// CHECK-NEXT:       %[[CALL:[0-9]+]] = py.call %[[DUE]](%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, every = %{{[0-9]+}}, keep = %{{[0-9]+}}, last = %{{[0-9]+}})
// CHECK-NEXT:       py.expr %[[CALL]]
// CHECK-NEXT:       %[[BARRIER:[0-9]+]] = py.name "barrier"
// CHECK-NEXT:       %[[WAIT:[0-9]+]] = py.call %[[BARRIER]]()
// CHECK-NEXT:       py.expr %[[WAIT]]
// CHECK:          py.name "finish_run"
// CHECK:        py.def @evaluate_checkpoint(trainer : %{{[0-9]+}}, args : %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:        py.def @_silent(*_args : %{{[0-9]+}}, **_kwargs : %{{[0-9]+}}) -> %{{[0-9]+}} {
// `serve_requests` (train_loop.py): under DDP only rank 0 serves, with the trained weights.
// CHECK:        py.def @serve_requests(trainer : %{{[0-9]+}}, args : %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:          %[[IS_MAIN:[0-9]+]] = py.attribute %{{[0-9]+}}, "is_main"
// CHECK-NEXT:     %[[OTHER_RANK:[0-9]+]] = py.unop "not" %[[IS_MAIN]]
// CHECK-NEXT:     py.if %[[OTHER_RANK]] {
// CHECK-NEXT:       py.return
// CHECK:          py.name "predict_and_export"
// CHECK-NOT:      py.name "generate_text"
// CHECK:        py.def @main(argv : %{{[0-9]+}} = %{{[0-9]+}}) -> %{{[0-9]+}} {
// CHECK:          %[[USER:[0-9]+]] = py.tuple[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}]
// CHECK-NEXT:     %[[BUG:[0-9]+]] = py.name "Exception"
// CHECK-NEXT:     py.try {
// CHECK:            %[[SETUP:[0-9]+]] = py.name "setup_distributed"
// CHECK:          } except [%[[USER]], %[[BUG]]] {
// CHECK-NEXT:     ^bb0(%[[ERROR:[a-z_0-9]+]]: !py.object):
// CHECK-NEXT:       py.fstring "error: {}"(%[[ERROR]])
// CHECK:          } {
// CHECK:            py.name "add_source_notes"
// CHECK:            py.raise
// CHECK-NEXT:     } finally {
// CHECK-NEXT:       py.name "teardown_distributed"
// CHECK:        torch.runtime []
// CHECK-NEXT:   torch.main {
// CHECK-NEXT:     %[[MAIN:[0-9]+]] = py.name "main"
// CHECK-NEXT:     %[[CODE:[0-9]+]] = py.call %[[MAIN]]()
// CHECK-NEXT:     %[[EXIT:[0-9]+]] = py.name "exit_process"
// CHECK-NEXT:     %[[CALL_EXIT:[0-9]+]] = py.call %[[EXIT]](%[[CODE]])
// CHECK-NEXT:     py.expr %[[CALL_EXIT]]
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NOT:  train.loop
