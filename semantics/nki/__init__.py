"""The NKI front end: NKI kernels written in Python (`@nki.jit` functions over
`nki.language` / `nki.isa`), read statically into the kernel language (docs/nki.md)."""

from semantics.nki.importer import NkiImport, import_file, import_source, kernel_names

__all__ = ["NkiImport", "import_file", "import_source", "kernel_names"]
