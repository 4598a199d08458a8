// `batch_fields` on train.loop: the named fields each batch carries (shape-inference writes
// it for data of named fields); it round-trips in the custom and the generic form.
// RUN: tl-opt %s | tl-opt | filecheck %s
// RUN: tl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

builtin.module {
  train.dataset @pairs = "digits-captions" {}
  train.loop @net on @pairs attributes {batch_fields = ["image", "text"]} {
    train.set "objective" = "clip_loss"
  }
}

// CHECK:      train.loop @net on @pairs attributes {batch_fields = ["image", "text"]} {
// CHECK-NEXT:   train.set "objective" = "clip_loss"
// GENERIC:    "train.loop"() <{model = @net, data = @pairs, batch_fields = ["image", "text"]}>
