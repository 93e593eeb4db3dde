"""The MLIR front end: SNAX programs read with xdsl (`parse`), SSA values and memref
aliases (`values`), the import into the IR (`importer`, with the facts of the SNAX rule in
`sites`) and the way back (`emit`). docs/snax.md."""
