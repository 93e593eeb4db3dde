// tiled_add.mlir at 2 tiles: a small .mlir kernel for the command-line tests
func.func @tiled_add(%A : memref<32xi64, "L3">, %B : memref<32xi64, "L3">, %D : memref<32xi64, "L3">) {
  %a = memref.alloc() : memref<16xi64, "L1">
  %b = memref.alloc() : memref<16xi64, "L1">
  %d = memref.alloc() : memref<16xi64, "L1">
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c16 = arith.constant 16 : index
  scf.for %iv = %c0 to %c32 step %c16 {
    %sa = memref.subview %A[%iv] [16] [1] : memref<32xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    %sb = memref.subview %B[%iv] [16] [1] : memref<32xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    %sd = memref.subview %D[%iv] [16] [1] : memref<32xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    "memref.copy"(%sa, %a) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
    "memref.copy"(%sb, %b) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
    linalg.generic {indexing_maps = [affine_map<(n) -> (n)>, affine_map<(n) -> (n)>, affine_map<(n) -> (n)>], iterator_types = ["parallel"]} ins(%a, %b : memref<16xi64, "L1">, memref<16xi64, "L1">) outs(%d : memref<16xi64, "L1">) {
    ^bb0(%x : i64, %y : i64, %z : i64):
      %s = arith.addi %x, %y : i64
      linalg.yield %s : i64
    }
    "memref.copy"(%d, %sd) : (memref<16xi64, "L1">, memref<16xi64, strided<[1], offset: ?>, "L3">) -> ()
  }
  func.return
}
