"""TensorLoom backends."""
