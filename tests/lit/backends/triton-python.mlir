// tl-opt prints triton IR as Python: the printer loads every backend's handlers itself.
// RUN: tl-opt %s -t python | filecheck %s

builtin.module {
  torch.script {
    torch.runtime ["load_weights"]
  }
}

// CHECK:      def unwrap_model(
// CHECK:      def strip_prefixes(
// CHECK:      def read_checkpoint(
// CHECK:      def load_weights(
// CHECK-NOT:  def save_checkpoint(
