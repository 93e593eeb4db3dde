// tiled_add.mlir double-buffered by hand, before core dispatch (like snax-mlir's
// kernels/tiled_add/tiled_pipelined.mlir, but one stream for all cores and no barriers):
// the loop is unrolled by two with explicit even/odd L1 buffers, and the DM core
// prefetches the next tile while the compute core adds the current one. No
// arith.select, so SNAX's insert-sync-barrier sees every dependence through SSA values.
#id = affine_map<(n) -> (n)>
func.func @tiled_add_prefetch(%A : memref<128xi64, "L3">, %B : memref<128xi64, "L3">, %D : memref<128xi64, "L3">) {
  %a0 = memref.alloc() : memref<16xi64, "L1">
  %b0 = memref.alloc() : memref<16xi64, "L1">
  %d0 = memref.alloc() : memref<16xi64, "L1">
  %a1 = memref.alloc() : memref<16xi64, "L1">
  %b1 = memref.alloc() : memref<16xi64, "L1">
  %d1 = memref.alloc() : memref<16xi64, "L1">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %sa0 = memref.subview %A[%c0] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
  %sb0 = memref.subview %B[%c0] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
  "memref.copy"(%sa0, %a0) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
  "memref.copy"(%sb0, %b0) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
  scf.for %j = %c0 to %c4 step %c1 {
    %even = arith.muli %j, %c32 : index
    %odd = arith.addi %even, %c16 : index
    %next = arith.addi %even, %c32 : index
    // prefetch the odd tile
    %sa1 = memref.subview %A[%odd] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    %sb1 = memref.subview %B[%odd] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    "memref.copy"(%sa1, %a1) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
    "memref.copy"(%sb1, %b1) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
    // the even tile
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a0, %b0 : memref<16xi64, "L1">, memref<16xi64, "L1">) outs(%d0 : memref<16xi64, "L1">) {
    ^bb0(%x : i64, %y : i64, %z : i64):
      %s = arith.addi %x, %y : i64
      linalg.yield %s : i64
    }
    %sd0 = memref.subview %D[%even] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    "memref.copy"(%d0, %sd0) : (memref<16xi64, "L1">, memref<16xi64, strided<[1], offset: ?>, "L3">) -> ()
    // prefetch the next even tile (not after the last pair)
    %j1 = arith.addi %j, %c1 : index
    %more = arith.cmpi ult, %j1, %c4 : index
    scf.if %more {
      %sa2 = memref.subview %A[%next] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
      %sb2 = memref.subview %B[%next] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
      "memref.copy"(%sa2, %a0) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
      "memref.copy"(%sb2, %b0) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
    }
    // the odd tile
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a1, %b1 : memref<16xi64, "L1">, memref<16xi64, "L1">) outs(%d1 : memref<16xi64, "L1">) {
    ^bb0(%x : i64, %y : i64, %z : i64):
      %s = arith.addi %x, %y : i64
      linalg.yield %s : i64
    }
    %sd1 = memref.subview %D[%odd] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    "memref.copy"(%d1, %sd1) : (memref<16xi64, "L1">, memref<16xi64, strided<[1], offset: ?>, "L3">) -> ()
  }
  func.return
}
