"""What several passes share, none of it a pass: symbol lookups over the IR (model_env), the
`py` op builder, what resolve-nml knows of a builtin call's values (the op classes build
the call), the loss and metric records' queries, the data-file checks, and check-kernels'
copy of triton.language's signatures."""
