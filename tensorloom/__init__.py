"""TensorLoom: a statically checked deep-learning language compiled to PyTorch and Triton."""

__version__ = "0.2.0"
