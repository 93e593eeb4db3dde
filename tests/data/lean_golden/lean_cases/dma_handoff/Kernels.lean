import Kernels.DmaHandoff
