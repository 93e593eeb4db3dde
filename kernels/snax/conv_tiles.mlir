// 3x3 convolution of a 34x34 i8 image (32x32 i32 output) in 8 row tiles of 4 output
// rows: the DM core copies the 3x3 weights once, then per tile the input rows with
// their halo (6x34) into L1; the compute core convolves; the DM core copies the 4x32
// output rows out. Written before core dispatch, in the style of snax-mlir's inputs.
#mI = affine_map<(y, x, ky, kx) -> (y + ky, x + kx)>
#mW = affine_map<(y, x, ky, kx) -> (ky, kx)>
#mO = affine_map<(y, x, ky, kx) -> (y, x)>
func.func @conv_tiles(%I : memref<34x34xi8, "L3">, %W : memref<3x3xi8, "L3">, %O : memref<32x32xi32, "L3">) {
  %w = memref.alloc() : memref<3x3xi8, "L1">
  %in = memref.alloc() : memref<6x34xi8, "L1">
  %out = memref.alloc() : memref<4x32xi32, "L1">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  "memref.copy"(%W, %w) : (memref<3x3xi8, "L3">, memref<3x3xi8, "L1">) -> ()
  scf.for %t = %c0 to %c8 step %c1 {
    %row = arith.muli %t, %c4 : index
    %si = memref.subview %I[%row, 0] [6, 34] [1, 1] : memref<34x34xi8, "L3"> to memref<6x34xi8, strided<[34, 1], offset: ?>, "L3">
    %so = memref.subview %O[%row, 0] [4, 32] [1, 1] : memref<32x32xi32, "L3"> to memref<4x32xi32, strided<[32, 1], offset: ?>, "L3">
    "memref.copy"(%si, %in) : (memref<6x34xi8, strided<[34, 1], offset: ?>, "L3">, memref<6x34xi8, "L1">) -> ()
    linalg.generic {indexing_maps = [#mI, #mW, #mO], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%in, %w : memref<6x34xi8, "L1">, memref<3x3xi8, "L1">) outs(%out : memref<4x32xi32, "L1">) {
    ^bb0(%x : i8, %k : i8, %acc : i32):
      %xe = arith.extsi %x : i8 to i32
      %ke = arith.extsi %k : i8 to i32
      %p = arith.muli %xe, %ke : i32
      %s = arith.addi %acc, %p : i32
      linalg.yield %s : i32
    }
    "memref.copy"(%out, %so) : (memref<4x32xi32, "L1">, memref<4x32xi32, strided<[32, 1], offset: ?>, "L3">) -> ()
  }
  func.return
}
