import Kernels.Rmsnorm
