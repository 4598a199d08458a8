// tl-opt prints triton IR as Python: the printer loads every backend's handlers itself.
// RUN: tl-opt %s -t python | filecheck %s

builtin.module {
  torch.script {
    torch.runtime ["strip_prefixes"]
  }
}

// CHECK:      def strip_prefixes(
// CHECK:      def _strip_key(
// CHECK-NOT:  def save_checkpoint(
