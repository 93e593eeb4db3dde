import Kernels.MaskedWait
