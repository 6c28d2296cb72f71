"""Read ``torch.save`` files (the zip format of torch >= 1.6) as numpy arrays, without torch.

A ``.pt`` file is a zip archive: ``<name>/data.pkl`` pickles the saved object, with each
tensor reduced to ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)`` and
each storage a persistent id ``("storage", torch.<Type>Storage, key, location, numel)`` whose
bytes are the uncompressed entry ``<name>/data/<key>``. :func:`load_pt` unpickles with a
restricted unpickler that accepts only those callables (as ``torch.load(weights_only=True)``
does) and maps every storage straight from the file (``numpy.memmap``), so a multi-GB shard
costs only the pages a reader touches. Tensors come back as numpy arrays (views of the file,
read-only); containers, ints, floats and strings as themselves.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BadTorchFile", "load_pt"]

_STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}
"""numpy dtype of each torch storage type (little endian, as torch writes on every platform
this runs on; the archive's ``byteorder`` entry is checked)."""

_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # a zip local file header, before name and extra


class BadTorchFile(ValueError):
    """The file is not a readable torch zip archive; the message names the file and the problem."""


class _StorageType:
    """Stands in for ``torch.<Type>Storage`` inside the pickle."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = np.dtype(_STORAGE_DTYPES[name])


def _rebuild_tensor(
    storage: np.ndarray, offset: int, size: tuple[int, ...], stride: tuple[int, ...], *_: Any
) -> np.ndarray:
    """``torch._utils._rebuild_tensor_v2``: a strided view of a storage."""
    item = storage.dtype.itemsize
    if size and offset + sum((s - 1) * st for s, st in zip(size, stride, strict=True)) >= len(storage):
        raise BadTorchFile(
            f"tensor of shape {size} at offset {offset} overruns its storage of {len(storage)}"
        )
    return np.lib.stride_tricks.as_strided(
        storage[offset:], shape=size, strides=[s * item for s in stride], writeable=False
    )


class _Unpickler(pickle.Unpickler):
    """Unpickles only tensors, storages and plain containers; storages are mapped from the file."""

    def __init__(self, data: bytes, storages: Any) -> None:
        super().__init__(io.BytesIO(data))
        self._storages = storages

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise BadTorchFile(f"unsupported object {module}.{name} in the pickle (only tensors and containers)")

    def persistent_load(self, pid: Any) -> np.ndarray:
        if not (
            isinstance(pid, tuple)
            and len(pid) == 5
            and pid[0] == "storage"
            and isinstance(pid[1], _StorageType)
        ):
            raise BadTorchFile(f"unsupported persistent id {pid!r}")
        _, kind, key, _, numel = pid
        return self._storages(str(key), kind.dtype, int(numel))


def _entry_offset(f: Any, info: zipfile.ZipInfo) -> int:
    """Byte offset of an entry's data in the archive (after its local header)."""
    f.seek(info.header_offset)
    header = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
    if header[0] != b"PK\x03\x04":
        raise BadTorchFile(f"bad local header for {info.filename}")
    return info.header_offset + _LOCAL_HEADER.size + header[-2] + header[-1]


def load_pt(path: str | Path) -> Any:
    """The object saved in ``path`` by ``torch.save``, with tensors as read-only numpy arrays
    mapped from the file; :class:`BadTorchFile` naming the file and the problem otherwise."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive, path.open("rb") as raw:
            names = archive.namelist()
            pickles = [n for n in names if n.endswith("/data.pkl")]
            if len(pickles) != 1:
                raise BadTorchFile(f"expected one <name>/data.pkl entry, found {len(pickles)}")
            root = pickles[0][: -len("data.pkl")]
            if f"{root}byteorder" in names and archive.read(f"{root}byteorder") != b"little":
                raise BadTorchFile("big-endian tensors are not supported")
            size = path.stat().st_size

            def storage(key: str, dtype: np.dtype, numel: int) -> np.ndarray:
                try:
                    info = archive.getinfo(f"{root}data/{key}")
                except KeyError:
                    raise BadTorchFile(f"storage {key} is missing from the archive") from None
                if info.compress_type != zipfile.ZIP_STORED or info.file_size < numel * dtype.itemsize:
                    raise BadTorchFile(f"storage {key} is compressed or shorter than its {numel} values")
                start = _entry_offset(raw, info)
                if start + info.file_size > size:
                    raise BadTorchFile(f"storage {key} ends past the end of the file (truncated)")
                if numel == 0:
                    return np.empty(0, dtype)
                return np.memmap(path, dtype=dtype, mode="r", offset=start, shape=(numel,))

            return _Unpickler(archive.read(pickles[0]), storage).load()
    except BadTorchFile as err:
        raise BadTorchFile(f"{path}: {err}") from None
    except (
        zipfile.BadZipFile,
        OSError,
        EOFError,
        pickle.UnpicklingError,
        KeyError,
        ValueError,
        TypeError,
        struct.error,
    ) as err:
        raise BadTorchFile(f"{path}: not a readable torch file: {type(err).__name__}: {err}") from err
