"""Which stream a change should be in: ``(base token, write time) -> stream``, vectorized.

The colocation rule of the row checks, over many generations at once: the generation is
the one operating at the write time (the last starting at or before it); inside it, the
stream ScyllaDB's ``get_stream`` gives the base key's token (vectorized
:class:`~cdcgen.core.lookup.StreamLookup` for vnode generations, a sorted search over
stream tokens for a tablets stream set). Numpy only, so a Spark task can carry it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.lookup import StreamLookup
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import to_micros
from cdcgen.core.windows import GenerationSpan

#: Per generation: vnode arrays, or a tablets set's sorted tokens and their 16-byte IDs.
_Mapping = GenerationArrays | tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]


class GenerationMapper:
    """``(base token, write time) -> expected stream`` over many generations at once.

    Picklable: numpy arrays only.
    """

    def __init__(self, generations: Sequence[GenerationSpan]) -> None:
        ordered = sorted(generations, key=lambda g: g.start)
        self._starts = np.array([to_micros(g.start) for g in ordered], dtype=np.int64)
        self._mappings: list[_Mapping] = []
        for generation in ordered:
            if isinstance(generation.mapping, TabletStreamSet):
                streams = generation.mapping.streams
                tokens = np.array([s.token for s in streams], dtype=np.int64)
                raw = np.frombuffer(b"".join(s.raw for s in streams), dtype=np.uint8)
                self._mappings.append((tokens, raw.reshape(-1, 16)))
            else:
                self._mappings.append(GenerationArrays.from_description(generation.mapping))

    def expected_streams(
        self, tokens: npt.NDArray[np.generic], write_micros: npt.NDArray[np.generic]
    ) -> list[str | None]:
        """Hex of each row's expected stream; None where no generation or token applies.

        ``tokens`` may be floats with NaN for rows whose base key could not be hashed.
        """
        result: list[str | None] = [None] * len(tokens)
        if not len(tokens) or not len(self._starts):
            return result
        valid = ~np.isnan(tokens) if tokens.dtype.kind == "f" else np.ones(len(tokens), bool)
        token_values = np.where(valid, tokens, 0).astype(np.int64)
        which = np.searchsorted(self._starts, write_micros.astype(np.int64), side="right") - 1
        for index in np.unique(which[valid & (which >= 0)]):
            rows = np.nonzero(valid & (which == index))[0]
            mapping = self._mappings[int(index)]
            if isinstance(mapping, GenerationArrays):
                lookup = StreamLookup.from_arrays(mapping)
                found = mapping.stream_bytes[lookup.stream_indices(token_values[rows])]
                present = np.ones(len(rows), bool)
            else:
                stream_tokens, raw = mapping
                position = np.searchsorted(stream_tokens, token_values[rows], side="left")
                present = position < len(stream_tokens)
                found = raw[np.where(present, position, 0)]
            for row, stream, ok in zip(rows, found, present, strict=True):
                result[int(row)] = bytes(stream).hex() if ok else None
        return result
