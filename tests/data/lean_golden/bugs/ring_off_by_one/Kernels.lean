import Kernels.RingOffByOne
