// conv_tiles.mlir double-buffered by hand (even/odd L1 input and output tiles, the loop
// unrolled by two): the DM core prefetches the next row tile and copies the previous
// output out while the compute core convolves. Before core dispatch, no arith.select.
#mI = affine_map<(y, x, ky, kx) -> (y + ky, x + kx)>
#mW = affine_map<(y, x, ky, kx) -> (ky, kx)>
#mO = affine_map<(y, x, ky, kx) -> (y, x)>
func.func @conv_tiles_prefetch(%I : memref<34x34xi8, "L3">, %W : memref<3x3xi8, "L3">, %O : memref<32x32xi32, "L3">) {
  %w = memref.alloc() : memref<3x3xi8, "L1">
  %in0 = memref.alloc() : memref<6x34xi8, "L1">
  %in1 = memref.alloc() : memref<6x34xi8, "L1">
  %out0 = memref.alloc() : memref<4x32xi32, "L1">
  %out1 = memref.alloc() : memref<4x32xi32, "L1">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  "memref.copy"(%W, %w) : (memref<3x3xi8, "L3">, memref<3x3xi8, "L1">) -> ()
  %si0 = memref.subview %I[0, 0] [6, 34] [1, 1] : memref<34x34xi8, "L3"> to memref<6x34xi8, strided<[34, 1]>, "L3">
  "memref.copy"(%si0, %in0) : (memref<6x34xi8, strided<[34, 1]>, "L3">, memref<6x34xi8, "L1">) -> ()
  scf.for %j = %c0 to %c4 step %c1 {
    %r0 = arith.muli %j, %c8 : index
    %r1 = arith.addi %r0, %c4 : index
    %r2 = arith.addi %r0, %c8 : index
    %si1 = memref.subview %I[%r1, 0] [6, 34] [1, 1] : memref<34x34xi8, "L3"> to memref<6x34xi8, strided<[34, 1], offset: ?>, "L3">
    "memref.copy"(%si1, %in1) : (memref<6x34xi8, strided<[34, 1], offset: ?>, "L3">, memref<6x34xi8, "L1">) -> ()
    linalg.generic {indexing_maps = [#mI, #mW, #mO], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%in0, %w : memref<6x34xi8, "L1">, memref<3x3xi8, "L1">) outs(%out0 : memref<4x32xi32, "L1">) {
    ^bb0(%x : i8, %k : i8, %acc : i32):
      %xe = arith.extsi %x : i8 to i32
      %ke = arith.extsi %k : i8 to i32
      %p = arith.muli %xe, %ke : i32
      %s = arith.addi %acc, %p : i32
      linalg.yield %s : i32
    }
    %so0 = memref.subview %O[%r0, 0] [4, 32] [1, 1] : memref<32x32xi32, "L3"> to memref<4x32xi32, strided<[32, 1], offset: ?>, "L3">
    "memref.copy"(%out0, %so0) : (memref<4x32xi32, "L1">, memref<4x32xi32, strided<[32, 1], offset: ?>, "L3">) -> ()
    %j1 = arith.addi %j, %c1 : index
    %more = arith.cmpi ult, %j1, %c4 : index
    scf.if %more {
      %si2 = memref.subview %I[%r2, 0] [6, 34] [1, 1] : memref<34x34xi8, "L3"> to memref<6x34xi8, strided<[34, 1], offset: ?>, "L3">
      "memref.copy"(%si2, %in0) : (memref<6x34xi8, strided<[34, 1], offset: ?>, "L3">, memref<6x34xi8, "L1">) -> ()
    }
    linalg.generic {indexing_maps = [#mI, #mW, #mO], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%in1, %w : memref<6x34xi8, "L1">, memref<3x3xi8, "L1">) outs(%out1 : memref<4x32xi32, "L1">) {
    ^bb0(%x : i8, %k : i8, %acc : i32):
      %xe = arith.extsi %x : i8 to i32
      %ke = arith.extsi %k : i8 to i32
      %p = arith.muli %xe, %ke : i32
      %s = arith.addi %acc, %p : i32
      linalg.yield %s : i32
    }
    %so1 = memref.subview %O[%r1, 0] [4, 32] [1, 1] : memref<32x32xi32, "L3"> to memref<4x32xi32, strided<[32, 1], offset: ?>, "L3">
    "memref.copy"(%out1, %so1) : (memref<4x32xi32, "L1">, memref<4x32xi32, strided<[32, 1], offset: ?>, "L3">) -> ()
  }
  func.return
}
