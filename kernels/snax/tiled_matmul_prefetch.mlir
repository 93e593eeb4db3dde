// tiled_matmul.mlir with the K loop double-buffered by hand (even/odd L1 A and B tiles,
// the K loop unrolled by two): the DM core fetches the next K step's tiles while the
// compute core multiplies the current ones. Before core dispatch, no arith.select.
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @tiled_matmul_prefetch(%A : memref<64x64xi8, "L3">, %B : memref<64x64xi8, "L3">, %C : memref<64x64xi32, "L3">) {
  %a0 = memref.alloc() : memref<16x16xi8, "L1">
  %b0 = memref.alloc() : memref<16x16xi8, "L1">
  %a1 = memref.alloc() : memref<16x16xi8, "L1">
  %b1 = memref.alloc() : memref<16x16xi8, "L1">
  %c = memref.alloc() : memref<16x16xi32, "L1">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.for %m = %c0 to %c4 step %c1 {
    scf.for %n = %c0 to %c4 step %c1 {
      %mo = arith.muli %m, %c16 : index
      %no = arith.muli %n, %c16 : index
      %sa0 = memref.subview %A[%mo, 0] [16, 16] [1, 1] : memref<64x64xi8, "L3"> to memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">
      %sb0 = memref.subview %B[0, %no] [16, 16] [1, 1] : memref<64x64xi8, "L3"> to memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">
      "memref.copy"(%sa0, %a0) : (memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">, memref<16x16xi8, "L1">) -> ()
      "memref.copy"(%sb0, %b0) : (memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">, memref<16x16xi8, "L1">) -> ()
      scf.for %kk = %c0 to %c2 step %c1 {
        %k0 = arith.muli %kk, %c32 : index
        %k1 = arith.addi %k0, %c16 : index
        %k2 = arith.addi %k0, %c32 : index
        %sa1 = memref.subview %A[%mo, %k1] [16, 16] [1, 1] : memref<64x64xi8, "L3"> to memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">
        %sb1 = memref.subview %B[%k1, %no] [16, 16] [1, 1] : memref<64x64xi8, "L3"> to memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">
        "memref.copy"(%sa1, %a1) : (memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">, memref<16x16xi8, "L1">) -> ()
        "memref.copy"(%sb1, %b1) : (memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">, memref<16x16xi8, "L1">) -> ()
        linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a0, %b0 : memref<16x16xi8, "L1">, memref<16x16xi8, "L1">) outs(%c : memref<16x16xi32, "L1">) {
        ^bb0(%x : i8, %y : i8, %acc : i32):
          %xe = arith.extsi %x : i8 to i32
          %ye = arith.extsi %y : i8 to i32
          %p = arith.muli %xe, %ye : i32
          %s = arith.addi %acc, %p : i32
          linalg.yield %s : i32
        }
        %kk1 = arith.addi %kk, %c1 : index
        %more = arith.cmpi ult, %kk1, %c2 : index
        scf.if %more {
          %sa2 = memref.subview %A[%mo, %k2] [16, 16] [1, 1] : memref<64x64xi8, "L3"> to memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">
          %sb2 = memref.subview %B[%k2, %no] [16, 16] [1, 1] : memref<64x64xi8, "L3"> to memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">
          "memref.copy"(%sa2, %a0) : (memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">, memref<16x16xi8, "L1">) -> ()
          "memref.copy"(%sb2, %b0) : (memref<16x16xi8, strided<[64, 1], offset: ?>, "L3">, memref<16x16xi8, "L1">) -> ()
        }
        linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a1, %b1 : memref<16x16xi8, "L1">, memref<16x16xi8, "L1">) outs(%c : memref<16x16xi32, "L1">) {
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
