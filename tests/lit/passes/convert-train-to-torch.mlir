// A train block and its markers become the script's sections around the model class.
// RUN: tl-opt %s -p convert-train-to-torch | filecheck %s

builtin.module {
  torch.script from "mnist.tl" {
    torch.module_class @Classifier() : "nn.Module" {
      torch.submodule "fc1" = "nn.Linear"("64", "10")
      torch.method @forward(x) {
      ^bb0(%x: !torch.value):
        %0 = torch.call_module "fc1"(%x)
        torch.return %0
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
// CHECK-NEXT:   torch.from_import "__future__" ["annotations"]
// CHECK:        torch.from_import "torch.nn.parallel" ["DistributedDataParallel"]
// CHECK-NEXT:   torch.raw "# Trains `Classifier` on `digits`, as `mnist.tl` says.
// CHECK:        torch.raw "# ---- runtime/distributed.py
// CHECK:        torch.raw "# ---- settings: {{.*}}\0AEPOCHS: int | None = 3\0ABATCH_SIZE = 64  {{.*}}\0ALEARNING_RATE = 0.003\0APRECISION = \22bf16\22
// CHECK-SAME:   DISTRIBUTED = True\0ACHECKPOINT_EVERY: int | None = 2  # epochs
// CHECK-SAME:   COMPILE_MODE: str | None = \22reduce-overhead\22
// CHECK-SAME:   DATASET: str | None = \22digits\22\0ADATASET_OPTIONS: dict[str, Any] = {\22flatten\22: True}"
// CHECK-NEXT:   torch.module_class @Classifier()
// CHECK:        torch.raw "def loss_fn({{.*}}F.cross_entropy(output, target, label_smoothing=0.1, reduction=reduction)"
// CHECK:        torch.raw "def build_trainer({{.*}}torch.optim.AdamW(\0A        decay_param_groups(model, DECAY_GROUPS), lr=LEARNING_RATE, weight_decay=0.01, fused=ctx.device.type == \22cuda\22
// CHECK:        torch.raw "def _begin_step()
// CHECK:        torch.raw "if __name__ == \22__main__\22:\0A    sys.exit(main())"
// CHECK-NEXT: }
// CHECK-NOT:  train.loop
