"""What several passes share, none of it a pass: symbol lookups over the IR (model_env), the `py`
op builder, resolve-nml's builtin builders, the loss and metric records' queries, the data-file
checks, and check-kernels' copy of triton.language's signatures."""
