// tiled_add.mlir double-buffered the way snax-mlir's pipeline passes do it
// (pipeline-duplicate-buffers: two L1 copies of each tile buffer, chosen by `i mod 2`;
// unroll-pipeline: a 3-stage prologue/steady state/epilogue with one
// snax.cluster_sync_op per steady-state iteration). `manual` times SNAX's own barriers;
// threshold removes them.
func.func @tiled_add_db(%A : memref<128xi64, "L3">, %B : memref<128xi64, "L3">, %D : memref<128xi64, "L3">) {
  %a0 = memref.alloc() : memref<16xi64, "L1">
  %a1 = memref.alloc() : memref<16xi64, "L1">
  %b0 = memref.alloc() : memref<16xi64, "L1">
  %b1 = memref.alloc() : memref<16xi64, "L1">
  %d0 = memref.alloc() : memref<16xi64, "L1">
  %d1 = memref.alloc() : memref<16xi64, "L1">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  // prologue: tile 0 in; tile 1 in while tile 0 computes
  %sa0 = memref.subview %A[%c0] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
  %sb0 = memref.subview %B[%c0] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
  "memref.copy"(%sa0, %a0) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
  "memref.copy"(%sb0, %b0) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
  "snax.cluster_sync_op"() : () -> ()
  %sa1 = memref.subview %A[%c16] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
  %sb1 = memref.subview %B[%c16] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
  "memref.copy"(%sa1, %a1) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
  "memref.copy"(%sb1, %b1) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
  linalg.generic {indexing_maps = [affine_map<(n) -> (n)>, affine_map<(n) -> (n)>, affine_map<(n) -> (n)>], iterator_types = ["parallel"]} ins(%a0, %b0 : memref<16xi64, "L1">, memref<16xi64, "L1">) outs(%d0 : memref<16xi64, "L1">) {
  ^bb0(%x : i64, %y : i64, %z : i64):
    %s = arith.addi %x, %y : i64
    linalg.yield %s : i64
  }
  "snax.cluster_sync_op"() : () -> ()
  // steady state: tile i in, tile i-1 computes, tile i-2 out
  scf.for %i = %c2 to %c8 step %c1 {
    %p = arith.remui %i, %c2 : index
    %even = arith.cmpi eq, %p, %c0 : index
    %a_in = arith.select %even, %a0, %a1 : memref<16xi64, "L1">
    %b_in = arith.select %even, %b0, %b1 : memref<16xi64, "L1">
    %a_c = arith.select %even, %a1, %a0 : memref<16xi64, "L1">
    %b_c = arith.select %even, %b1, %b0 : memref<16xi64, "L1">
    %d_c = arith.select %even, %d1, %d0 : memref<16xi64, "L1">
    %d_out = arith.select %even, %d0, %d1 : memref<16xi64, "L1">
    %off = arith.muli %i, %c16 : index
    %im2 = arith.subi %i, %c2 : index
    %off2 = arith.muli %im2, %c16 : index
    %sa = memref.subview %A[%off] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    %sb = memref.subview %B[%off] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    %sd = memref.subview %D[%off2] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
    "memref.copy"(%sa, %a_in) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
    "memref.copy"(%sb, %b_in) : (memref<16xi64, strided<[1], offset: ?>, "L3">, memref<16xi64, "L1">) -> ()
    linalg.generic {indexing_maps = [affine_map<(n) -> (n)>, affine_map<(n) -> (n)>, affine_map<(n) -> (n)>], iterator_types = ["parallel"]} ins(%a_c, %b_c : memref<16xi64, "L1">, memref<16xi64, "L1">) outs(%d_c : memref<16xi64, "L1">) {
    ^bb0(%x : i64, %y : i64, %z : i64):
      %s = arith.addi %x, %y : i64
      linalg.yield %s : i64
    }
    "memref.copy"(%d_out, %sd) : (memref<16xi64, "L1">, memref<16xi64, strided<[1], offset: ?>, "L3">) -> ()
    "snax.cluster_sync_op"() : () -> ()
  }
  // epilogue: tile 7 computes while tile 6 goes out; then tile 7 out
  %c96 = arith.constant 96 : index
  %c112 = arith.constant 112 : index
  %sd6 = memref.subview %D[%c96] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
  %sd7 = memref.subview %D[%c112] [16] [1] : memref<128xi64, "L3"> to memref<16xi64, strided<[1], offset: ?>, "L3">
  linalg.generic {indexing_maps = [affine_map<(n) -> (n)>, affine_map<(n) -> (n)>, affine_map<(n) -> (n)>], iterator_types = ["parallel"]} ins(%a1, %b1 : memref<16xi64, "L1">, memref<16xi64, "L1">) outs(%d1 : memref<16xi64, "L1">) {
  ^bb0(%x : i64, %y : i64, %z : i64):
    %s = arith.addi %x, %y : i64
    linalg.yield %s : i64
  }
  "memref.copy"(%d0, %sd6) : (memref<16xi64, "L1">, memref<16xi64, strided<[1], offset: ?>, "L3">) -> ()
  "snax.cluster_sync_op"() : () -> ()
  "memref.copy"(%d1, %sd7) : (memref<16xi64, "L1">, memref<16xi64, strided<[1], offset: ?>, "L3">) -> ()
  "snax.cluster_sync_op"() : () -> ()
  func.return
}
