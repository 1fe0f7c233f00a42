"""A BERT sentence encoder as an ONNX graph, built from its safetensors weights without PyTorch.

A sentence-transformers model of the BERT family (all-MiniLM-L6-v2 and its kin: ``config.json``
with ``model_type`` ``bert``, ``model.safetensors``, mean or CLS pooling, optionally a
Normalize module) is an encoder of a fixed shape. :func:`build_graph` writes that shape as
standard ONNX operators (opset 18) with the model's weights as initializers: inputs
``input_ids``, ``attention_mask`` and ``lead_mask`` (int64, batch x tokens; the lead mask marks
the tokens of a text's title), outputs ``embedding`` and ``lead`` (float32, batch x hidden size,
L2-normalised when the model normalises): the text pooled over all its tokens, and over its
lead's tokens only (for CLS pooling both are the CLS vector). :func:`prepare_model` builds it
once, quantises its matrix products to int8 (ONNX Runtime's dynamic quantisation) and keeps
the result in a cache directory named by the weights' SHA-256, so later processes only load
the file.

Token type ids are always 0 for single sentences, so their embedding row is folded into the
position embeddings.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labbrain.errors import SemanticUnavailable
from labbrain.files import atomic_file

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: Bumped whenever the graph written for the same weights changes (it names the cache entry).
GRAPH_VERSION = "3"
OPSET = 18
WEIGHTS_FILE = "model.safetensors"


@dataclass(frozen=True)
class EncoderShape:
    """What the graph needs from the model's configuration files."""

    layers: int
    hidden: int
    heads: int
    epsilon: float
    pooling: str  # "mean" or "cls"
    normalize: bool
    max_positions: int


def read_shape(model_dir: Path) -> EncoderShape:
    """The encoder's shape from ``config.json`` and the sentence-transformers module files.

    Raises SemanticUnavailable naming what is unsupported (not BERT, another activation or
    pooling, missing files)."""
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SemanticUnavailable(f"no readable config.json in {model_dir} ({error})") from None
    if config.get("model_type") != "bert":
        raise _unsupported(model_dir, f"model_type {config.get('model_type')!r}, not 'bert'")
    if config.get("hidden_act", "gelu") != "gelu":
        raise _unsupported(model_dir, f"activation {config.get('hidden_act')!r}, not 'gelu'")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise _unsupported(model_dir, "position embeddings other than absolute")
    pooling, normalize = _pooling(model_dir)
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    if hidden % heads:
        raise _unsupported(model_dir, f"hidden size {hidden} not divisible by {heads} heads")
    return EncoderShape(
        layers=int(config["num_hidden_layers"]),
        hidden=hidden,
        heads=heads,
        epsilon=float(config.get("layer_norm_eps", 1e-12)),
        pooling=pooling,
        normalize=normalize,
        max_positions=int(config.get("max_position_embeddings", 512)),
    )


def _pooling(model_dir: Path) -> tuple[str, bool]:
    """(pooling, normalised) as the sentence-transformers module list says (a plain BERT
    folder without one: mean pooling, normalised)."""
    modules_file = model_dir / "modules.json"
    if not modules_file.is_file():
        return "mean", True
    modules = json.loads(modules_file.read_text(encoding="utf-8"))
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    pooling = "mean"
    for module, kind in zip(modules, kinds, strict=True):
        if kind == "Pooling":
            settings = json.loads(
                (model_dir / module.get("path", "") / "config.json").read_text(encoding="utf-8")
            )
            chosen = [k for k, v in settings.items() if k.startswith("pooling_mode_") and v]
            if chosen == ["pooling_mode_mean_tokens"]:
                pooling = "mean"
            elif chosen == ["pooling_mode_cls_token"]:
                pooling = "cls"
            else:
                raise _unsupported(model_dir, f"pooling {', '.join(chosen) or 'none'}")
    unknown = [k for k in kinds if k not in ("Transformer", "Pooling", "Normalize")]
    if unknown:
        raise _unsupported(model_dir, f"modules {', '.join(unknown)}")
    return pooling, "Normalize" in kinds


def _unsupported(model_dir: Path, what: str) -> SemanticUnavailable:
    return SemanticUnavailable(
        f"the model in {model_dir} has {what}; the ONNX runtime encodes BERT models with mean or "
        "CLS pooling (set LABBRAIN_EMBEDDING_RUNTIME=sentence-transformers for others)"
    )


DIGESTED_FILES = ("config.json", "modules.json", WEIGHTS_FILE)


def weights_digest(model_dir: Path) -> str:
    """SHA-256 of the weights file, the model's configuration and the graph version."""
    digest = hashlib.sha256(GRAPH_VERSION.encode("ascii"))
    for name in DIGESTED_FILES:
        path = model_dir / name
        if path.is_file():
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def remembered_digest(model_dir: Path, cache_dir: Path) -> str:
    """:func:`weights_digest` of ``model_dir``, read from ``cache_dir/digests`` when the same
    files (path, size, modification time, inode) were digested before, else computed (hashing
    90 MB of weights takes ~70 ms at every start) and remembered there atomically. A file that
    changes gets a new modification time and so a new digest; an unwritable cache only costs
    the hashing."""
    stamp = hashlib.sha256(GRAPH_VERSION.encode("ascii"))
    for name in DIGESTED_FILES:
        path = model_dir / name
        if path.is_file():
            info = path.stat()
            fields = (str(path.resolve()), info.st_size, info.st_mtime_ns, info.st_ino)
            stamp.update(repr(fields).encode("utf-8"))
    memo = cache_dir / "digests" / f"{stamp.hexdigest()[:32]}.sha256"
    try:
        known = memo.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        known = ""
    if len(known) == 64 and all(c in "0123456789abcdef" for c in known):
        return known
    digest = weights_digest(model_dir)
    with contextlib.suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(memo) as handle:
            handle.write(digest.encode("ascii"))
    return digest


class _Graph:
    """Nodes and initializers of a graph under construction, with fresh names."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0
        self._scalars: dict[float, str] = {}

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def constant(self, hint: str, value: NDArray[Any]) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def scalar(self, value: float) -> str:
        """A float32 scalar initializer, one per value however often it is asked for."""
        import numpy as np

        if value not in self._scalars:
            self._scalars[value] = self.constant("scalar", np.array(value, np.float32))
        return self._scalars[value]

    def op(self, kind: str, inputs: list[str], hint: str | None = None, **attrs: Any) -> str:
        from onnx import helper

        out = self.name(hint or kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out


def build_graph(model_dir: Path) -> Any:
    """The encoder in ``model_dir`` as an ``onnx.ModelProto`` (see module doc)."""
    import numpy as np
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    shape = read_shape(model_dir)
    try:
        weights = load_file(str(model_dir / WEIGHTS_FILE))
    except (OSError, ValueError) as error:
        raise SemanticUnavailable(f"cannot read {model_dir / WEIGHTS_FILE} ({error})") from None
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

    def w(name: str) -> NDArray[np.float32]:
        key = prefix + name
        if key not in weights:
            raise _unsupported(model_dir, f"no weight {key}")
        return np.ascontiguousarray(weights[key], dtype=np.float32)

    g = _Graph()
    hidden, heads = shape.hidden, shape.heads
    size = hidden // heads
    axis1 = g.constant("axis1", np.array([1], np.int64))

    # Embeddings: word + position (+ token type 0), then LayerNorm.
    words = g.op(
        "Gather",
        [g.constant("word_embeddings", w("embeddings.word_embeddings.weight")), "input_ids"],
        "words",
        axis=0,
    )
    positions_table = (
        w("embeddings.position_embeddings.weight") + w("embeddings.token_type_embeddings.weight")[0]
    )
    tokens = g.op(
        "Slice",
        [
            g.op("Shape", ["input_ids"], "shape"),
            axis1,
            g.constant("two", np.array([2], np.int64)),
        ],
        "tokens",
    )
    positions = g.op(
        "Slice",
        [
            g.constant("positions", positions_table),
            g.constant("zero", np.array([0], np.int64)),
            tokens,
            g.constant("axis0", np.array([0], np.int64)),
        ],
        "positions",
    )
    epsilon = shape.epsilon
    x = _layer_norm(g, g.op("Add", [words, positions]), w, "embeddings.LayerNorm", epsilon)

    # The attention mask as an additive bias: 0 where attended, a large negative elsewhere.
    mask = g.op("Cast", ["attention_mask"], "mask", to=TensorProto.FLOAT)
    bias = g.op("Mul", [g.op("Sub", [g.scalar(1.0), mask]), g.scalar(-1e4)], "bias")
    bias = g.op("Unsqueeze", [bias, g.constant("axes12", np.array([1, 2], np.int64))], "bias4")
    split = g.constant("split_heads", np.array([0, 0, heads, size], np.int64))
    merge = g.constant("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = g.scalar(1.0 / math.sqrt(size))

    for layer in range(shape.layers):
        at = f"encoder.layer.{layer}."
        # queries and values as (batch, head, token, size), keys as (batch, head, size, token)
        query, key, value = (
            g.op(
                "Transpose",
                [g.op("Reshape", [_linear(g, x, w, at + f"attention.self.{name}"), split])],
                perm=perm,
            )
            for name, perm in (
                ("query", [0, 2, 1, 3]),
                ("key", [0, 2, 3, 1]),
                ("value", [0, 2, 1, 3]),
            )
        )
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [query, key]), scale]), bias])
        probabilities = g.op("Softmax", [scores], axis=-1)
        context = g.op("MatMul", [probabilities, value])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge])
        attended = _linear(g, context, w, at + "attention.output.dense")
        x = _layer_norm(
            g, g.op("Add", [attended, x]), w, at + "attention.output.LayerNorm", epsilon
        )
        inner = _gelu(g, _linear(g, x, w, at + "intermediate.dense"))
        out = _linear(g, inner, w, at + "output.dense")
        x = _layer_norm(g, g.op("Add", [out, x]), w, at + "output.LayerNorm", epsilon)

    def normalised(pooled: str) -> str:
        if not shape.normalize:
            return pooled
        norm = g.op("ReduceL2", [pooled, axis1], keepdims=1)
        return g.op("Div", [pooled, g.op("Max", [norm, g.scalar(1e-12)])], "normalised")

    if shape.pooling == "cls":
        pooled = g.op("Gather", [x, g.constant("first", np.array(0, np.int64))], "pooled", axis=1)
        embedding = lead = normalised(pooled)
    else:
        # Mean pooling over the attended tokens, and over the lead's (the title's) alone: the
        # title's words in the context of the whole text.
        lead_mask = g.op("Cast", ["lead_mask"], "lead_mask_float", to=TensorProto.FLOAT)
        axis2 = g.constant("axis2", np.array([2], np.int64))

        def mean_over(weights: str) -> str:
            weighted = g.op("Mul", [x, g.op("Unsqueeze", [weights, axis2])])
            total = g.op("ReduceSum", [weighted, axis1], keepdims=0)
            count = g.op("ReduceSum", [weights, axis1], keepdims=1)
            return g.op("Div", [total, g.op("Max", [count, g.scalar(1e-9)])], "pooled")

        embedding = normalised(mean_over(mask))
        lead = normalised(mean_over(g.op("Mul", [mask, lead_mask])))
    g.nodes.append(helper.make_node("Identity", [embedding], ["embedding"]))
    g.nodes.append(helper.make_node("Identity", [lead], ["lead"]))

    tokens_shape = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "sentence_encoder",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, tokens_shape)
            for name in ("input_ids", "attention_mask", "lead_mask")
        ],
        [
            helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", hidden])
            for name in ("embedding", "lead")
        ],
        g.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="labbrain"
    )
    model.ir_version = 8
    return model


def _linear(g: _Graph, x: str, w: Callable[[str], Any], name: str) -> str:
    """``x @ weight.T + bias`` of the named dense layer (the transposed weight is stored)."""
    import numpy as np

    weight = g.constant(name + ".weight", np.ascontiguousarray(w(name + ".weight").T))
    return g.op("Add", [g.op("MatMul", [x, weight]), g.constant(name + ".bias", w(name + ".bias"))])


def _layer_norm(g: _Graph, x: str, w: Callable[[str], Any], name: str, epsilon: float) -> str:
    scale = g.constant(name + ".weight", w(name + ".weight"))
    shift = g.constant(name + ".bias", w(name + ".bias"))
    return g.op("LayerNormalization", [x, scale, shift], axis=-1, epsilon=epsilon)


def _gelu(g: _Graph, x: str) -> str:
    """The exact GELU, ``0.5 x (1 + erf(x / sqrt 2))`` (what BERT's "gelu" is)."""
    erf = g.op("Erf", [g.op("Div", [x, g.scalar(math.sqrt(2.0))])])
    return g.op("Mul", [g.op("Mul", [x, g.scalar(0.5)]), g.op("Add", [erf, g.scalar(1.0)])])


def prepare_model(model_dir: Path, cache_dir: Path, *, quantize: bool = True) -> Path:
    """The path of the ONNX encoder for ``model_dir`` (int8 unless ``quantize`` is false),
    built and written into ``cache_dir`` on first use (atomically: a crashed build leaves
    nothing that a later call would read)."""
    digest = remembered_digest(model_dir, cache_dir)
    name = f"encoder-{digest[:20]}-{'int8' if quantize else 'fp32'}.onnx"
    target = cache_dir / name
    if target.is_file():
        return target
    import onnx

    cache_dir.mkdir(parents=True, exist_ok=True)
    model = build_graph(model_dir)
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".build-") as work:
        plain = Path(work) / "fp32.onnx"
        onnx.save(model, str(plain))
        built = plain
        if quantize:
            import logging

            from labbrain.index import ort_runtime

            ort_runtime.load()
            from onnxruntime.quantization import QuantType, quantize_dynamic

            built = Path(work) / "int8.onnx"
            # Per-channel int8 weights of the matrix products and the word embeddings: a
            # quarter of the file, and vectors at a median cosine of 0.993 to the fp32
            # model's on the real corpus (per-tensor weights: 0.946).
            logging.disable(logging.WARNING)  # its advice to pre-process, on the root logger
            try:
                quantize_dynamic(
                    str(plain),
                    str(built),
                    weight_type=QuantType.QInt8,
                    op_types_to_quantize=["MatMul", "Gather"],
                    per_channel=True,
                )
            finally:
                logging.disable(logging.NOTSET)
        os.replace(built, target)
    return target
