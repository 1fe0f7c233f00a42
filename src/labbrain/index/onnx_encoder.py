"""The default embedding provider: a BERT sentence encoder run by ONNX Runtime, int8, no PyTorch.

The model's files (``config.json``, ``model.safetensors``, ``tokenizer.json``, the
sentence-transformers module files) are read from the model directory
(:func:`labbrain.index.embeddings.resolve_model`); the encoder graph is built from them once and
kept, quantised to int8, in labbrain's cache directory (:mod:`labbrain.index.bert_graph`).
Texts are cut to their first ``max_tokens`` word pieces: the title and the opening of the
content, which carry a node's meaning (all-MiniLM-L6-v2 was trained on 128-token inputs).

A text of more than one line is a titled text (see
:meth:`labbrain.index.embeddings.EmbeddingProvider.embed`): its first line is the title. Its
vector is the whole text's plus ``title_weight`` times its title's (the title's word pieces
pooled in the context of the whole text, from the same run of the model), normalised: a node's
title names what it is about, its body mostly how. A one-line text (a query) is embedded as
it is. The weight was chosen on the tune split of the paraphrase set
(``bench/tune_title_weight.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from labbrain.errors import SemanticUnavailable
from labbrain.index import ort_runtime
from labbrain.index.bert_graph import prepare_model, read_shape
from labbrain.index.cached_embedder import CachingEmbedder

if TYPE_CHECKING:
    from labbrain.index.cached_embedder import Vectors


#: How much a titled text's title adds to its vector (0: the whole text alone).
TITLE_WEIGHT = 0.75


def encoder_id(model_id: str, max_tokens: int, title_weight: float = TITLE_WEIGHT) -> str:
    """The id of vectors this provider makes from ``model_id``'s weights (int8, cut at
    ``max_tokens``, titles weighed ``title_weight``): vectors of another runtime, cut or
    weight are not mixed with them."""
    titles = f", title weight {title_weight:g}" if title_weight else ""
    return f"{model_id} (onnx int8, {max_tokens} tokens{titles})"


class OnnxProvider(CachingEmbedder):
    """A BERT sentence encoder as an :class:`~labbrain.index.embeddings.EmbeddingProvider`
    (see module doc). Thread-safe; recently embedded texts are cached. Its ``model_id`` is
    :func:`encoder_id` of the model's.

    Raises SemanticUnavailable when the folder holds no usable BERT model or tokenizer."""

    def __init__(
        self,
        model_dir: Path,
        model_id: str,
        *,
        cache_dir: Path,
        max_tokens: int = 128,
        title_weight: float = TITLE_WEIGHT,
        threads: int | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        onnxruntime = ort_runtime.load()

        super().__init__()
        shape = read_shape(model_dir)
        self._dimension = shape.hidden
        self.max_tokens = min(max_tokens, shape.max_positions)
        self.title_weight = title_weight
        self._model_id = encoder_id(model_id, self.max_tokens, title_weight)
        try:
            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except Exception as error:  # tokenizers raises its own exception kinds
            raise SemanticUnavailable(
                f"no usable tokenizer.json in {model_dir} ({str(error)[:200]})"
            ) from None
        tokenizer.enable_truncation(max_length=self.max_tokens)
        pad = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_padding(pad_id=pad if pad is not None else 0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        path = prepare_model(model_dir, cache_dir)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or max(1, min(os.cpu_count() or 1, 8))
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # No busy-waiting between runs: on a small machine spinning worker threads take the
        # cores from the rest of the process (the task that saves progress, the next search).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # No memory pattern: it is planned per input shape, and batches sorted by length each
        # have their own; with it `labbrain embed` peaked 100 MB higher (390 against 285 MB on
        # the real corpus) at the same speed.
        options.enable_mem_pattern = False
        self._session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )

    def _encode(self, texts: list[str]) -> Vectors:
        import numpy as np

        whole, lead = self.encode_parts(texts)
        if not self.title_weight:
            return whole
        combined = whole + self.title_weight * lead
        norms = np.maximum(np.linalg.norm(combined, axis=1, keepdims=True), 1e-12)
        return np.asarray(combined / norms, dtype=np.float32)

    def encode_parts(self, texts: list[str]) -> tuple[Vectors, Vectors]:
        """(whole, title) vectors of one batch of ``texts``: each text pooled over all its
        word pieces, and over its title's word pieces (a titled text's first line, as far as
        the cut keeps it; for a one-line text, or a title without word pieces, the whole
        text's vector again)."""
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        lead = mask.copy()
        for row, (text, encoding) in enumerate(zip(texts, encodings, strict=True)):
            title_end = text.find("\n")
            if title_end <= 0:
                continue
            ends = np.array([end for _, end in encoding.offsets])
            special = np.array(encoding.special_tokens_mask, dtype=bool)
            in_title = (ends <= title_end) & ~special & (mask[row] == 1)
            if in_title.any():
                lead[row] = in_title
        whole, title = self._session.run(
            ["embedding", "lead"], {"input_ids": ids, "attention_mask": mask, "lead_mask": lead}
        )
        return np.asarray(whole, dtype=np.float32), np.asarray(title, dtype=np.float32)
