"""TensorLoom tools."""
