// A train block and its markers become the script's sections around the model class.
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
// CHECK-NEXT:   torch.raw "# Trains `Classifier` on `digits`, as `mnist.tl` says.
// CHECK:        torch.raw "# ---- settings: {{.*}}\0AEPOCHS: int | None = 3\0ABATCH_SIZE = 64  {{.*}}\0ALEARNING_RATE = 0.003\0APRECISION = \22bf16\22
// CHECK-SAME:   DISTRIBUTED = True\0ACHECKPOINT_EVERY: int | None = 2  # epochs
// CHECK-SAME:   COMPILE_MODE: str | None = \22reduce-overhead\22
// CHECK-SAME:   DATASET: str | None = \22digits\22\0ADATASET_OPTIONS: dict[str, Any] = {\22flatten\22: True}"
// CHECK-NEXT:   torch.module_class @Classifier()
// CHECK:        torch.raw "def loss_fn({{.*}}F.cross_entropy(output, target, label_smoothing=0.1, reduction=reduction)"
// CHECK:        torch.raw "def build_trainer({{.*}}torch.optim.AdamW(\0A        decay_param_groups(model, DECAY_GROUPS), lr=LEARNING_RATE, weight_decay=0.01, fused=ctx.device.type == \22cuda\22
// CHECK:        torch.raw "def _begin_step(trainer: Trainer)
// CHECK:        torch.runtime []
// CHECK-NEXT:   torch.raw "if __name__ == \22__main__\22:\0A    sys.exit(main())"
// CHECK-NEXT: }
// CHECK-NOT:  train.loop
