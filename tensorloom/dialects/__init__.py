"""TensorLoom dialects."""
