builtin.module {}
