// Vector add D = A + B, 128 x i64 in L3, tiles of 16 staged in L1 (after snax-mlir's
// kernels/tiled_add, written before core dispatch: every core runs this stream, the DM
// core its copies, the compute core its linalg.generic). `syncproof bench --profile snax`
// times it under snax-barrier (SNAX's insert-sync-barrier) and threshold (barrier-free).
func.func @tiled_add(%A : memref<128xi64, "L3">, %B : memref<128xi64, "L3">, %D : memref<128xi64, "L3">) {
  %a = memref.alloc() : memref<16xi64, "L1">
  %b = memref.alloc() : memref<16xi64, "L1">
  %d = memref.alloc() : memref<16xi64, "L1">
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c16 = arith.constant 16 : index
  scf.for %iv = %c0 to %c128 step %c16 {
    %sa = memref.subview %A[%iv] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    %sb = memref.subview %B[%iv] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    %sd = memref.subview %D[%iv] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
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
