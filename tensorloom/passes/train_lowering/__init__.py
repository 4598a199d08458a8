"""convert-train-to-torch's builders: the `ScriptPlan` at the bottom (plan.py), one module per
family of script sections above it (train_build, train_cli, train_data, train_loop,
train_records, train_settings, train_step, script_statements), and their order (sections.py)."""
