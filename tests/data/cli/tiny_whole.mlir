// A small .mlir kernel with whole-buffer copies (no subview, so no range accesses): the
// Lean export refuses range accesses, and `lean` must still take .mlir input.
func.func @whole_add(%A : memref<16xi64, "L3">, %B : memref<16xi64, "L3">, %D : memref<16xi64, "L3">) {
  %a = memref.alloc() : memref<16xi64, "L1">
  %b = memref.alloc() : memref<16xi64, "L1">
  %d = memref.alloc() : memref<16xi64, "L1">
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  scf.for %iv = %c0 to %c2 step %c1 {
    "memref.copy"(%A, %a) : (memref<16xi64, "L3">, memref<16xi64, "L1">) -> ()
    "memref.copy"(%B, %b) : (memref<16xi64, "L3">, memref<16xi64, "L1">) -> ()
    linalg.generic {indexing_maps = [affine_map<(n) -> (n)>, affine_map<(n) -> (n)>, affine_map<(n) -> (n)>], iterator_types = ["parallel"]} ins(%a, %b : memref<16xi64, "L1">, memref<16xi64, "L1">) outs(%d : memref<16xi64, "L1">) {
    ^bb0(%x : i64, %y : i64, %z : i64):
      %s = arith.addi %x, %y : i64
      linalg.yield %s : i64
    }
    "memref.copy"(%d, %D) : (memref<16xi64, "L1">, memref<16xi64, "L3">) -> ()
  }
  func.return
}
