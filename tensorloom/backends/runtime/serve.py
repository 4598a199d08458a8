"""Using a trained model from its script: predictions, an exported program, generated text.

    x = read_predict_inputs("batch.npz", sample_shape=(64,))    # or .pt, .csv, an image
    write_predictions(predict(model, x, batch_size=256), "out.npz")   # or None: stdout
    export_model(model, x[:2], "model.pt2")         # torch.export; "model.onnx" with onnx
    text = generate_text(model, "def ", tokens=200, temperature=0.8, top_k=40, block_size=64)

`predict` is the model's forward in eval mode under `torch.no_grad()`, batch by
batch, so its rows equal `model(x)`. An image file becomes one sample of the
model's input shape: converted to grayscale or RGB by its channel count, resized,
scaled to [0, 1], then normalised with the training set's statistics when given.
`generate_text` is byte-level (the `"text"` datasets' vocabulary of 256): the
prompt's UTF-8 bytes, then sampled tokens, decoded with errors replaced.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
from pathlib import Path

import torch

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")


class PredictInputError(Exception):
    """An input file for --predict that cannot be read as the model's input."""


def read_predict_inputs(
    path: str | Path,
    *,
    sample_shape: tuple[int, ...],
    normalisation: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
    integer: bool = False,
) -> torch.Tensor:
    """A batch of inputs [N, *sample_shape] from a .npz, .pt, .csv or image file."""
    file = Path(path)
    if not file.is_file():
        raise PredictInputError(f"{file}: no such input file")
    suffix = file.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return _read_image(file, sample_shape, normalisation)
    readers = {".npz": _npz_inputs, ".pt": _pt_inputs, ".csv": _csv_inputs}
    if suffix not in readers:
        raise PredictInputError(
            f"{file}: --predict reads .npz, .pt, .csv or an image ({', '.join(IMAGE_SUFFIXES)})"
        )
    x = readers[suffix](file)
    x = x.long() if integer else x.float()
    if tuple(x.shape[1:]) != tuple(sample_shape):
        if x.numel() == 0 or x[0].numel() != math.prod(sample_shape):
            raise PredictInputError(
                f"{file}: samples of shape {list(x.shape[1:])}, the model takes "
                f"{list(sample_shape)}"
            )
        x = x.reshape(len(x), *sample_shape)
    return x


def _npz_inputs(file: Path) -> torch.Tensor:
    import numpy as np

    with np.load(file, allow_pickle=False) as arrays:
        key = "x" if "x" in arrays.files else (arrays.files[0] if arrays.files else None)
        if key is None:
            raise PredictInputError(f"{file} holds no arrays")
        return torch.from_numpy(np.ascontiguousarray(arrays[key]))


def _pt_inputs(file: Path) -> torch.Tensor:
    try:
        payload = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as error:
        raise PredictInputError(f"{file} is not a readable torch file ({error})") from None
    if isinstance(payload, dict) and isinstance(payload.get("x"), torch.Tensor):
        return payload["x"]
    if isinstance(payload, torch.Tensor):
        return payload
    raise PredictInputError(f"{file} must hold a tensor, or a dict with a tensor `x`")


def _csv_inputs(file: Path) -> torch.Tensor:
    rows = [row for row in csv.reader(io.StringIO(file.read_text(encoding="utf-8"))) if row]
    with contextlib.suppress(ValueError):
        return torch.tensor([[float(v) for v in row] for row in rows])
    try:  # a header line
        return torch.tensor([[float(v) for v in row] for row in rows[1:]])
    except ValueError as error:
        raise PredictInputError(f"{file}: every value must be a number ({error})") from None


def _read_image(
    file: Path,
    sample_shape: tuple[int, ...],
    normalisation: tuple[tuple[float, ...], tuple[float, ...]] | None,
) -> torch.Tensor:
    from PIL import Image

    flat = len(sample_shape) == 1
    shape = sample_shape if not flat else _square(sample_shape[0])
    if len(shape) != 3 or shape[0] not in (1, 3):
        raise PredictInputError(
            f"{file}: an image needs a model input of [C, H, W] with C 1 or 3, "
            f"not {list(sample_shape)}"
        )
    channels, height, width = shape
    with Image.open(file) as image:
        image = image.convert("L" if channels == 1 else "RGB").resize((width, height))
        data = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8)
    x = data.reshape(height, width, channels).permute(2, 0, 1).float() / 255.0
    if normalisation is not None:
        mean, std = (torch.tensor(v).reshape(-1, 1, 1) for v in normalisation)
        x = (x - mean) / std
    return x.reshape(1, *sample_shape)


def _square(size: int) -> tuple[int, ...]:
    side = round(size**0.5)
    return (1, side, side) if side * side == size else (size,)


@torch.no_grad()
def predict(
    model: torch.nn.Module, x: torch.Tensor, *, batch_size: int, device: torch.device | None = None
) -> torch.Tensor:
    """The model's outputs for every row of `x`, in eval mode, on the CPU."""
    model.eval()
    device = device or next(model.parameters()).device
    outputs = [model(x[i : i + batch_size].to(device)).float().cpu()
               for i in range(0, len(x), batch_size)]  # fmt: skip
    return torch.cat(outputs) if outputs else torch.empty(0)


def write_predictions(outputs: torch.Tensor, out: str | Path | None, *, classes: bool) -> None:
    """To `out` (.npz, .pt or .csv by its suffix) or, with None, to stdout: one line per
    sample (the predicted class and its probability for a classifier, else the values)."""
    if out is None:
        _print_predictions(outputs, classes)
        return
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = target.suffix.lower()
    if suffix == ".pt":
        torch.save({"outputs": outputs}, target)
    elif suffix == ".npz":
        import numpy as np

        np.savez(target, outputs=outputs.numpy())
    elif suffix == ".csv":
        with target.open("w", newline="") as f:
            writer = csv.writer(f)
            for row in outputs.reshape(len(outputs), -1).tolist():
                writer.writerow([f"{v:.6g}" for v in row])
    else:
        raise PredictInputError(f"{target}: --out writes .npz, .pt or .csv")


def _print_predictions(outputs: torch.Tensor, classes: bool) -> None:
    if classes and outputs.dim() == 2:
        probabilities = outputs.softmax(dim=-1)
        best = probabilities.max(dim=-1)
        for i, (p, c) in enumerate(zip(best.values.tolist(), best.indices.tolist(), strict=True)):
            print(f"{i}\tclass {c}\tp={p:.4f}")
        return
    for i, row in enumerate(outputs.reshape(len(outputs), -1).tolist()):
        print(f"{i}\t" + " ".join(f"{v:.6g}" for v in row))


class ExportError(Exception):
    """An export the model or the environment cannot make; the message says why."""


def export_model(model: torch.nn.Module, example: torch.Tensor, path: str | Path) -> Path:
    """torch.export the model (eval mode) for inputs like `example`, batch size dynamic where
    the model allows; `.onnx` goes through torch.onnx (needs the onnx package)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    model.eval()
    if target.suffix.lower() == ".onnx":
        try:
            import onnx  # noqa: F401  (torch.onnx's dynamo exporter needs it)
        except ImportError:
            raise ExportError(
                f"{target}: ONNX export needs the onnx package (pip install onnx onnxscript); "
                "a .pt2 file (torch.export) needs nothing more"
            ) from None
        torch.onnx.export(model, (example,), str(target), dynamo=True)
        return target
    program = _exported(model, example)
    torch.export.save(program, target)
    return target


def _exported(model: torch.nn.Module, example: torch.Tensor) -> torch.export.ExportedProgram:
    batch = torch.export.Dim("batch", min=1)
    try:
        return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
    except Exception:
        try:
            return torch.export.export(model, (example,))
        except Exception as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise ExportError(f"torch.export could not trace the model: {first}") from None


@torch.no_grad()
def generate_text(
    model: torch.nn.Module,
    prompt: str,
    *,
    tokens: int,
    block_size: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int | None = None,
) -> str:
    """The prompt followed by `tokens` sampled bytes; temperature 0 takes the argmax."""
    model.eval()
    device = next(model.parameters()).device
    ids = torch.tensor([list(prompt.encode("utf-8")) or [10]], dtype=torch.long, device=device)
    generator = torch.Generator(device=device)
    if seed is not None:
        generator.manual_seed(seed)
    for _ in range(tokens):
        logits = model(ids[:, -block_size:])[:, -1, :].float()
        ids = torch.cat([ids, _sample(logits, temperature, top_k, generator)], dim=1)
    return bytes(ids[0].tolist()).decode("utf-8", errors="replace")


def _sample(
    logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator
) -> torch.Tensor:
    if temperature <= 0:
        return logits.argmax(dim=-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.multinomial(logits.softmax(dim=-1), 1, generator=generator)
