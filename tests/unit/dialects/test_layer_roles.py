"""What the compiler asks of a layer is on its catalogue record, not in a list of names."""

from __future__ import annotations

from tensorloom.catalogue.layers import LAYERS, lookup


def test_the_layers_whose_first_argument_is_the_input_size() -> None:
    first = {n for n, s in LAYERS.items() if s.input_size_first}
    assert first == {"Linear", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
                     "BatchNorm1d", "BatchNorm2d", "LayerNorm", "RMSNorm", "LSTM", "GRU",
                     "MultiHeadAttention"}  # fmt: skip


def test_norms_and_index_layers() -> None:
    assert {n for n, s in LAYERS.items() if s.is_norm} == {
        "BatchNorm1d", "BatchNorm2d", "LayerNorm", "RMSNorm", "GroupNorm",
    }  # fmt: skip
    assert {n for n, s in LAYERS.items() if s.takes_indices} == {"Embedding"}


def test_a_first_layer_says_what_sample_it_takes() -> None:
    def sample(kind: str, *args: int) -> tuple[int, ...] | None:
        spec = lookup(kind)
        assert spec is not None
        bound = spec.bind(list(args), {})
        assert not isinstance(bound, list)
        return spec.sample_shape(bound)

    assert sample("Linear", 784, 10) == (784,)
    assert sample("LayerNorm", 512) == (16, 512)
    assert sample("Conv2d", 3, 16, 3) == (3, 32, 32)
    assert sample("Conv1d", 2, 4, 3) == (2, 64)
    assert sample("Embedding", 100, 8) is None
