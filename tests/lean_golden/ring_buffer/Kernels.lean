import Kernels.RingBuffer
