// `--print-ir-after-all` prints the IR to stderr once after each pass (the last one too);
// `--print-between-passes` prints it to stdout between two passes only, the output after
// the last following it.
// RUN: %tl-opt %s -p desugar-pipes,resolve-nml --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER
// RUN: %tl-opt %s -p desugar-pipes,resolve-nml --print-between-passes | filecheck %s --check-prefix=BETWEEN

builtin.module {
  nml.model @Net {
    nml.layer @fc = "Linear" [4 : i64, 2 : i64] {}
    nml.func @forward(%x: !nml.tensor<[B, 4], f32>) -> !nml.tensor<*, f32> attributes {arg_names = ["x"]} {
      %0 = nml.pipe %x into "self.fc"() {arg_names = []} : (!nml.tensor<[B, 4], f32>) -> !nml.tensor<*, f32>
      nml.return %0 : !nml.tensor<*, f32>
    }
  }
}

// AFTER:      // -----// IR after desugar-pipes //----- //
// AFTER-NEXT: builtin.module {
// AFTER:        %0 = nml.call "self.fc"(%x)
// AFTER:      // -----// IR after resolve-nml //----- //
// AFTER-NEXT: builtin.module {
// AFTER:        %0 = nml.apply @fc(%x)
// AFTER-NOT:  IR after

// BETWEEN:      // -----// IR after desugar-pipes //----- //
// BETWEEN-NEXT: builtin.module {
// BETWEEN:        %0 = nml.call "self.fc"(%x)
// BETWEEN-NOT:  IR after
// BETWEEN:      builtin.module {
// BETWEEN:        %0 = nml.apply @fc(%x)
