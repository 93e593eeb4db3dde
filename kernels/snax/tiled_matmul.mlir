// Tiled matmul C = A * B (64x64 i8 -> i32) in 16x16 tiles: for each output tile, the
// DM core copies an A tile and a B tile into L1 per K step, the compute core
// accumulates their product into the L1 C tile, and the DM core copies the C tile out.
// Written before core dispatch, in the style of snax-mlir's inputs.
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @tiled_matmul(%A : memref<64x64xi8, "L3">, %B : memref<64x64xi8, "L3">, %C : memref<64x64xi32, "L3">) {
  %a = memref.alloc() : memref<16x16xi8, "L1">
  %b = memref.alloc() : memref<16x16xi8, "L1">
  %c = memref.alloc() : memref<16x16xi32, "L1">
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %m = %c0 to %c4 step %c1 {
    scf.for %n = %c0 to %c4 step %c1 {
      %mo = arith.muli %m, %c16 : index
      %no = arith.muli %n, %c16 : index
      scf.for %k = %c0 to %c4 step %c1 {
        %ko = arith.muli %k, %c16 : index
        %sa = memref.subview %A[%mo, %ko] [16, 16] [1, 1] : memref<64x64xi8, "L3"> to memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">
        %sb = memref.subview %B[%ko, %no] [16, 16] [1, 1] : memref<64x64xi8, "L3"> to memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">
        "memref.copy"(%sa, %a) : (memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">, memref<16x16xi8, "L1">) -> ()
        "memref.copy"(%sb, %b) : (memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">, memref<16x16xi8, "L1">) -> ()
        linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<16x16xi8, "L1">, memref<16x16xi8, "L1">) outs(%c : memref<16x16xi32, "L1">) {
        ^bb0(%x : i8, %y : i8, %acc : i32):
          %xe = arith.extsi %x : i8 to i32
          %ye = arith.extsi %y : i8 to i32
          %p = arith.muli %xe, %ye : i32
          %s = arith.addi %acc, %p : i32
          linalg.yield %s : i32
        }
      }
      %sc = memref.subview %C[%mo, %no] [16, 16] [1, 1] : memref<64x64xi32, "L3"> to memref<16x16xi32, strided<[64, 1], offset: ?>, "L3">
      "memref.copy"(%c, %sc) : (memref<16x16xi32, "L1">, memref<16x16xi32, strided<[64, 1], offset: ?>, "L3">) -> ()
    }
  }
  func.return
}
