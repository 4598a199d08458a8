// `loss_target` on train.loop: a `loss` block over named fields, the field its loss takes
// (shape-inference writes it with `batch_fields`); it round-trips in both forms.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

builtin.module {
  train.dataset @pairs = "digits-captions" {}
  train.loop @net on @pairs attributes {batch_fields = ["image", "text", "label"], loss_target = "label"} {
    train.set "loss" = "CrossEntropy"
  }
}

// CHECK:      train.loop @net on @pairs attributes {batch_fields = ["image", "text", "label"], loss_target = "label"} {
// CHECK-NEXT:   train.set "loss" = "CrossEntropy"
// GENERIC:    "train.loop"() <{model = @net, data = @pairs, batch_fields = ["image", "text", "label"], loss_target = "label"}>
