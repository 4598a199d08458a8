"""TensorLoom: a statically checked deep-learning language compiled to PyTorch and Triton."""

__version__ = "0.2.0"
REPORT_URL = "https://github.com/techxsarwar/tensorloom/issues"
"""Where an internal compiler error asks to be reported: pyproject.toml's `Issues` URL, the
tracker of the repository README.md names."""
