"""TensorLoom passes."""
