"""TensorLoom frontend."""
