"""The shared half of the embedding providers: a thread-safe text cache over their encoders.

Both providers (:mod:`labbrain.index.embeddings`, :mod:`labbrain.index.onnx_encoder`) derive
from :class:`CachingEmbedder`; it imports neither, so they import it without a circle.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Vectors = NDArray[np.float32]

_CACHED_TEXTS = 4096


class CachingEmbedder:
    """The shared half of the providers: ``embed`` over a subclass's ``_encode``, with the
    last :data:`_CACHED_TEXTS` texts' vectors kept (repeated queries cost nothing) and one
    batch encoded at a time (thread-safe); the subclass sets ``_model_id`` and
    ``_dimension``."""

    _model_id: str
    _dimension: int

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Any] = OrderedDict()

    @property
    def model_id(self) -> str:
        """What identifies the model (and runtime) the vectors come from."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """Length of every vector (384 for all-MiniLM-L6-v2)."""
        return self._dimension

    def _encode(self, texts: list[str]) -> Vectors:
        """Unit-length float32 rows of ``texts`` (one batch)."""
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit-length float32 vectors of ``texts``, in order (cached ones not computed
        again)."""
        import numpy as np

        wanted = list(texts)
        with self._lock:
            missing = list(dict.fromkeys(t for t in wanted if t not in self._cache))
            if missing:
                for text, row in zip(missing, self._encode(missing), strict=True):
                    self._cache[text] = np.asarray(row, dtype=np.float32)
            rows = []
            for text in wanted:
                self._cache.move_to_end(text)
                rows.append(self._cache[text])
            while len(self._cache) > _CACHED_TEXTS:
                self._cache.popitem(last=False)
        if not rows:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.vstack(rows).astype(np.float32, copy=False)
