// `batch_fields`' verifier: one or more fields, each once, each an identifier.
// RUN: tl-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

train.loop @net on @pairs attributes {batch_fields = []} {
  train.set "epochs" = 1 : i64
}
// CHECK: `batch_fields` lists one or more fields, each once

// -----

train.loop @net on @pairs attributes {batch_fields = ["image", "image"]} {
  train.set "epochs" = 1 : i64
}
// CHECK: `batch_fields` lists one or more fields, each once

// -----

train.loop @net on @pairs attributes {batch_fields = ["image", "two words"]} {
  train.set "epochs" = 1 : i64
}
// CHECK: `batch_fields` are identifiers: an objective's parameters

// -----

train.loop @net on @pairs attributes {batch_fields = ["image", "text"], loss_target = "label"} {
  train.set "loss" = "CrossEntropy"
}
// CHECK: `loss_target` is one of the `batch_fields`

// -----

train.loop @net on @pairs attributes {loss_target = "label"} {
  train.set "loss" = "CrossEntropy"
}
// CHECK: `loss_target` is one of the `batch_fields`
