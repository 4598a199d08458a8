// Unknown keys, bad values and names in a train block; tl-opt prints them and no IR.
// RUN: not %tl-opt %s -p check-train 2>&1 | filecheck %s

builtin.module {
  train.dataset @data = "digits" {flatten = true}
  train.loop @net on @data {
    train.set "epoch" = 10 : i64 loc("t.tl":2:5)
    train.set "optimizer" = #nml.call<"Adma", [], {lr = 1.000000e-03 : f64}> loc("t.tl":3:5)
    train.set "precision" = "fp8" loc("t.tl":4:5)
    train.set "batch_size" = 0 : i64 loc("t.tl":5:5)
  }
}

// CHECK-DAG: error[TL0401]: unknown setting `epoch`
// CHECK-DAG: = help: did you mean `epochs`?
// CHECK-DAG: error[TL0404]: unknown optimizer `Adma`
// CHECK-DAG: = help: did you mean `Adam`?
// CHECK-DAG: error[TL0407]: `precision` must be one of `auto`, `fp32`, `fp16`, `bf16`, got `fp8`
// CHECK-DAG: error[TL0403]: `batch_size` must be at least 1, got 0
